// Why the relay refuses or ends a session. The code travels to the client as
// the WebSocket/WebTransport close code, the string as the close reason.

export const RELAY_CLOSE = {
  RELAY_ERR_MALFORMED_DATAGRAM: 4400,
  RELAY_ERR_TOKEN_MALFORMED: 4401,
  RELAY_ERR_TOKEN_SIGNATURE: 4401,
  RELAY_ERR_TOKEN_EXPIRED: 4401,
  RELAY_ERR_TOKEN_NOT_YET_VALID: 4401,
  RELAY_ERR_BACKEND_NOT_ALLOWED: 4403,
  RELAY_ERR_HANDSHAKE_TIMEOUT: 4408,
  RELAY_ERR_NOT_FOUND: 4404,
  RELAY_ERR_TOKEN_IN_USE: 4409,
  RELAY_ERR_TOKEN_REUSED: 4409,
  RELAY_ERR_CONNECTION_ID_IN_USE: 4409,
  RELAY_ERR_RESUME_FAILED: 4410,
  RELAY_ERR_DATAGRAM_TOO_LARGE: 4413,
  RELAY_ERR_RATE_LIMITED: 4429,
  RELAY_ERR_IDLE_TIMEOUT: 4000,
  RELAY_SESSION_MOVED: 4001,
  /** The relay is draining: resume this session through another relay now (same token). */
  RELAY_SESSION_MOVING: 4002,
  RELAY_ERR_BACKEND_UNREACHABLE: 4502,
  RELAY_ERR_SERVER_FULL: 4503,
  RELAY_SHUTTING_DOWN: 1001,
} as const;

export type RelayCloseCode = keyof typeof RELAY_CLOSE;

/** "CODE: detail", as sent in close reasons (WebSocket caps them at 123 bytes). */
export function closeReason(code: RelayCloseCode, detail?: string): string {
  const s = detail ? `${code}: ${detail}` : code;
  return Buffer.byteLength(s) <= 123 ? s : code;
}
