// Every error the SDK raises carries a stable `code` (listed in ERROR_CODES
// and in the README's table). Programmer misuse throws synchronously;
// network failures arrive as `close` events or rejected promises.
import { SEND_ERRORS } from './wasm-codes.js';

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
  RICOCHET_ERR_INVALID_PAYLOAD: 'send() takes an ArrayBuffer or an ArrayBufferView.',
  RICOCHET_ERR_NO_LISTENER: "Too many messages arrived with no 'message' listener.",
  RICOCHET_ERR_CHANNELS_DIFFER: "The server declares another channel layout; `reason` names the server's.",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * A relay's refusal or close, as a program acts on it: `code` is the close
 * code (4401 token, 4409 in use, 4503 full, …; the README lists what to do
 * for each) and `error` the symbolic name that starts its reason.
 */
export interface RelayClose {
  code: number;
  /** E.g. 'RELAY_ERR_TOKEN_EXPIRED'; null if the reason names none. */
  error: string | null;
  reason: string;
}

/** A transport's close code and reason as a RelayClose, or null if a relay did not send it (1000, 1006, …). */
export function relayClose(code: number | undefined, reason: string | undefined): RelayClose | null {
  const c = code ?? 0;
  const r = reason ?? '';
  const error = /^(RELAY_[A-Z_]+)/.exec(r)?.[1] ?? null;
  if (error === null && (c < 4000 || c > 4999)) return null;
  return { code: c, error, reason: r };
}

export class RicochetError extends Error {
  readonly code: ErrorCode;
  /** For send errors: the message that was refused, handed back untouched. */
  readonly data?: Uint8Array;
  /** Why the connection ended, for errors that report a close (a rejected `ready`). */
  readonly reason?: string;
  /** The relay's close code and name, when a relay refused or ended the session. */
  readonly relay?: RelayClose;

  constructor(code: ErrorCode, message?: string, data?: Uint8Array, close?: { reason: string; relay: RelayClose | null }) {
    super(redactTokens(message ?? ERROR_CODES[code]));
    this.name = 'RicochetError';
    this.code = code;
    if (data !== undefined) this.data = data;
    if (close) {
      this.reason = redactTokens(close.reason);
      if (close.relay) this.relay = close.relay;
    }
  }
}

/**
 * The exact bytes of a send() payload: any ArrayBufferView (a typed array's
 * own bytes, not its numbers cut to bytes) or ArrayBuffer. Anything else
 * throws, so a string from plain JavaScript is never sent as zeros.
 */
export function payloadBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // By tag, not instanceof: a buffer from another realm (an iframe, a worker's transfer) counts too.
  const tag = Object.prototype.toString.call(data);
  if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') return new Uint8Array(data as ArrayBuffer);
  const what = data === null ? 'null' : typeof data === 'object' ? tag.slice(8, -1) : typeof data;
  throw new RicochetError('RICOCHET_ERR_INVALID_PAYLOAD', `send() takes an ArrayBuffer or an ArrayBufferView, got ${what}`);
}

/** Connect tokens never reach an error, a log line or stats: `token=…` in a URL is cut. */
export function redactTokens(text: string): string {
  return text.replace(/([?&]token=)[^&#\s)'"]+/g, '$1[redacted]');
}

/** The core's negative send results (generated from Rust; typed here, so each must be an ErrorCode). */
const SEND_CODES: Readonly<Record<number, ErrorCode | undefined>> = SEND_ERRORS;

/** Maps the core's negative send result to an error carrying the message. */
export function sendError(code: number, data: Uint8Array): RicochetError {
  const c = SEND_CODES[code] ?? 'RICOCHET_ERR_NOT_CONNECTED';
  return new RicochetError(c, ERROR_CODES[c], data);
}

/** A readable reason from anything thrown or rejected: an Error's message,
 *  a string, or a description of what came instead (`undefined` included). */
export function reasonOf(e: unknown): string {
  return redactTokens(describeThrown(e));
}

function describeThrown(e: unknown): string {
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
