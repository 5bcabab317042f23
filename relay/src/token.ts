// Connect tokens: the game's backend signs, the relay verifies before a
// single byte reaches a game server. Format (all base64url, no padding):
//   rct1.<payload>.<signature>   signature = HMAC-SHA256(secret, "rct1." + payload)
// payload = JSON { sub, backend: "host:port", iat, exp (unix seconds), jti, nbf?, data? }
// and nothing else: the shape is checked strictly, since every field steers
// what the relay does.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseBackend } from './backend-address.js';

export interface TokenClaims {
  /** The user this token admits (1–256 characters). */
  sub: string;
  /** Game server address, "host:port" (port 1–65535) or "[v6]:port". */
  backend: string;
  /** Issued at, seconds since the Unix epoch. */
  iat: number;
  /** Expiry, seconds since the Unix epoch. */
  exp: number;
  /** Not before, seconds since the Unix epoch (optional). */
  nbf?: number;
  /** Unique token ID: one session per token, ever (8–64 characters). */
  jti: string;
  /** Opaque application data for the game server (at most 1 024 bytes). */
  data?: string;
}

export type TokenErrorCode =
  | 'RELAY_ERR_TOKEN_MALFORMED'
  | 'RELAY_ERR_TOKEN_SIGNATURE'
  | 'RELAY_ERR_TOKEN_EXPIRED'
  | 'RELAY_ERR_TOKEN_NOT_YET_VALID';

export class TokenError extends Error {
  constructor(
    readonly code: TokenErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TokenError';
  }
}

const PREFIX = 'rct1';
const CLAIM_KEYS = new Set(['sub', 'backend', 'iat', 'exp', 'nbf', 'jti', 'data']);
/** Longest `data` claim, bytes: it rides in the backend's handshake. */
export const MAX_DATA_BYTES = 1024;

/** How the relay judges a token's times. */
export interface TokenTimePolicy {
  /** Clock skew forgiven on `iat` and `nbf`, seconds. */
  leewaySeconds: number;
  /** Longest `exp - iat` accepted, seconds. */
  maxLifetimeSeconds: number;
}

export const DEFAULT_TIME_POLICY: TokenTimePolicy = { leewaySeconds: 30, maxLifetimeSeconds: 3600 };

function sign(secret: Uint8Array | string, payload: string): Buffer {
  return createHmac('sha256', secret).update(`${PREFIX}.${payload}`).digest();
}

export interface MintOptions {
  sub: string;
  backend: string;
  /** Lifetime in seconds. Default 60. */
  ttlSeconds?: number;
  /** Not valid before now + this many seconds. Default: valid at once. */
  notBeforeSeconds?: number;
  data?: string;
  /** Override the clock (seconds), for tests. */
  nowSeconds?: number;
}

/** Mint a token (for development and for game backends written in Node). */
export function mintToken(secret: Uint8Array | string, o: MintOptions): string {
  if (!parseBackend(o.backend)) throw new TypeError(`backend must be "host:port" with a port in 1..65535, got ${JSON.stringify(o.backend)}`);
  const now = Math.floor(o.nowSeconds ?? Date.now() / 1000);
  const claims: TokenClaims = {
    sub: o.sub,
    backend: o.backend,
    iat: now,
    exp: now + Math.round(o.ttlSeconds ?? 60),
    jti: randomBytes(12).toString('base64url'),
    ...(o.notBeforeSeconds !== undefined ? { nbf: now + Math.round(o.notBeforeSeconds) } : {}),
    ...(o.data !== undefined ? { data: o.data } : {}),
  };
  const problem = shapeProblem(claims);
  if (problem) throw new TypeError(`token claims: ${problem}`);
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${PREFIX}.${payload}.${sign(secret, payload).toString('base64url')}`;
}

/** Verify signature, shape and times; returns the claims or throws TokenError. */
export function verifyToken(secret: Uint8Array | string, token: string, nowSeconds = Date.now() / 1000, policy = DEFAULT_TIME_POLICY): TokenClaims {
  const claims = verifyTokenSignature(secret, token);
  checkTimes(claims, nowSeconds, policy);
  return claims;
}

/**
 * Throws unless the token may start a session now: not expired, not before
 * its `nbf` or `iat` (with leeway), and no longer-lived than the policy allows.
 */
export function checkTimes(claims: TokenClaims, nowSeconds = Date.now() / 1000, policy = DEFAULT_TIME_POLICY): void {
  if (claims.exp - claims.iat > policy.maxLifetimeSeconds)
    throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', `token lifetime ${claims.exp - claims.iat} s exceeds ${policy.maxLifetimeSeconds} s`);
  if (claims.exp <= nowSeconds) throw new TokenError('RELAY_ERR_TOKEN_EXPIRED', `token expired ${Math.round(nowSeconds - claims.exp)} s ago`);
  const notBefore = Math.max(claims.iat, claims.nbf ?? claims.iat);
  if (notBefore > nowSeconds + policy.leewaySeconds)
    throw new TokenError('RELAY_ERR_TOKEN_NOT_YET_VALID', `token valid in ${Math.round(notBefore - nowSeconds)} s`);
}

/** What is wrong with a decoded payload's shape, or null. */
function shapeProblem(c: unknown): string | null {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return 'payload is not a JSON object';
  const o = c as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!CLAIM_KEYS.has(k)) return `unknown claim ${JSON.stringify(k.slice(0, 32))}`;
  if (typeof o.sub !== 'string' || o.sub.length < 1 || o.sub.length > 256) return 'sub must be a string of 1..256 characters';
  if (!parseBackend(o.backend)) return 'backend must be "host:port" with a port in 1..65535';
  for (const k of ['iat', 'exp'] as const) if (!Number.isSafeInteger(o[k]) || (o[k] as number) < 0) return `${k} must be a whole number of seconds`;
  if (o.nbf !== undefined && (!Number.isSafeInteger(o.nbf) || (o.nbf as number) < 0)) return 'nbf must be a whole number of seconds';
  if (typeof o.jti !== 'string' || !/^[A-Za-z0-9_-]{8,64}$/.test(o.jti)) return 'jti must be 8..64 base64url characters';
  if (o.data !== undefined && (typeof o.data !== 'string' || Buffer.byteLength(o.data) > MAX_DATA_BYTES)) return `data must be a string of at most ${MAX_DATA_BYTES} bytes`;
  return null;
}

/**
 * Verify the signature and shape only. The relay uses this to let a session
 * that is still live resume after its token expired (bounded by the session).
 */
export function verifyTokenSignature(secret: Uint8Array | string, token: string): TokenClaims {
  if (typeof token !== 'string' || token.length > 4096) throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', 'token missing or too long');
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', 'token is not rct1.<payload>.<signature>');
  const [, payload, sig] = parts as [string, string, string];
  const expected = sign(secret, payload);
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new TokenError('RELAY_ERR_TOKEN_SIGNATURE', 'token signature does not verify');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', 'token payload is not JSON');
  }
  const problem = shapeProblem(claims);
  if (problem) throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', problem);
  return claims as TokenClaims;
}
