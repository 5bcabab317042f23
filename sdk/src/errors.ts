// Every error the SDK raises carries a stable `code` (listed in ERROR_CODES
// and in the README's table). Programmer misuse throws synchronously;
// network failures arrive as `close` events or rejected promises.

export const ERROR_CODES = {
  RICOCHET_ERR_SEND_BUFFER_FULL: 'The send buffer cannot take this message now; retry after acks drain it.',
  RICOCHET_ERR_MESSAGE_TOO_LARGE: 'The message exceeds maxMessageBytes.',
  RICOCHET_ERR_UNKNOWN_CHANNEL: 'No channel with this index or name was declared at connect.',
  RICOCHET_ERR_NOT_CONNECTED: 'The connection is not open (still connecting, or closed).',
  RICOCHET_ERR_INVALID_OPTIONS: 'An option is out of range; the message names it.',
  RICOCHET_ERR_REJECTED: 'The server refused the connection; `reason` says why.',
  RICOCHET_ERR_HANDSHAKE_TIMEOUT: 'The server did not answer within handshakeTimeoutMs.',
  RICOCHET_ERR_IDLE_TIMEOUT: 'Nothing arrived from the peer within idleTimeoutMs.',
  RICOCHET_ERR_CLOSED_BY_PEER: 'The peer closed the connection; `closeCode` and `reason` say why.',
  RICOCHET_ERR_CLOSED_LOCALLY: 'close() was called on this side.',
  RICOCHET_ERR_TRANSPORT_CLOSED: 'The underlying transport (socket) closed.',
  RICOCHET_ERR_RESUME_FAILED: 'The transport died and no new one resumed the session within resumeWindowMs (or the relay refused the resume); `reason` says why.',
  RICOCHET_ERR_TRANSPORT_UNAVAILABLE: 'This runtime lacks the transport (e.g. no WebTransport in this browser).',
  RICOCHET_ERR_TRANSPORT_FAILED: 'The transport could not be opened (refused, blocked, or timed out); the message says which.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class RicochetError extends Error {
  readonly code: ErrorCode;
  /** For send errors: the message that was refused, handed back untouched. */
  readonly data?: Uint8Array;

  constructor(code: ErrorCode, message?: string, data?: Uint8Array) {
    super(message ?? ERROR_CODES[code]);
    this.name = 'RicochetError';
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

const SEND_CODES: Record<number, ErrorCode> = {
  [-1]: 'RICOCHET_ERR_SEND_BUFFER_FULL',
  [-2]: 'RICOCHET_ERR_MESSAGE_TOO_LARGE',
  [-3]: 'RICOCHET_ERR_UNKNOWN_CHANNEL',
  [-4]: 'RICOCHET_ERR_NOT_CONNECTED',
};

/** Maps the core's negative send result to an error carrying the message. */
export function sendError(code: number, data: Uint8Array): RicochetError {
  const c = SEND_CODES[code] ?? 'RICOCHET_ERR_NOT_CONNECTED';
  return new RicochetError(c, ERROR_CODES[c], data);
}

/** A readable reason from anything thrown or rejected: an Error's message,
 *  a string, or a description of what came instead (`undefined` included). */
export function reasonOf(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e || 'empty reason';
  if (e === undefined || e === null) return `no reason given (${String(e)})`;
  const m = (e as { message?: unknown }).message;
  if (typeof m === 'string' && m) return m;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}
