// Connect tokens: the game's backend signs, the relay verifies before a
// single byte reaches a game server. Format (all base64url, no padding):
//   rct1.<payload>.<signature>   signature = HMAC-SHA256(secret, "rct1." + payload)
// payload = JSON { sub, backend: "host:port", exp: unix seconds, jti, data? }.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface TokenClaims {
  /** The user this token admits. */
  sub: string;
  /** Game server address, "host:port". */
  backend: string;
  /** Expiry, seconds since the Unix epoch. */
  exp: number;
  /** Unique token ID: one live session per token. */
  jti: string;
  /** Opaque application data, passed through. */
  data?: string;
}

export type TokenErrorCode = 'RELAY_ERR_TOKEN_MALFORMED' | 'RELAY_ERR_TOKEN_SIGNATURE' | 'RELAY_ERR_TOKEN_EXPIRED';

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

function sign(secret: Uint8Array | string, payload: string): Buffer {
  return createHmac('sha256', secret).update(`${PREFIX}.${payload}`).digest();
}

export interface MintOptions {
  sub: string;
  backend: string;
  /** Lifetime in seconds. Default 60. */
  ttlSeconds?: number;
  data?: string;
  /** Override the clock (seconds), for tests. */
  nowSeconds?: number;
}

/** Mint a token (for development and for game backends written in Node). */
export function mintToken(secret: Uint8Array | string, o: MintOptions): string {
  if (!/^[^:\s]+:\d{1,5}$/.test(o.backend)) throw new TypeError(`backend must be "host:port", got ${JSON.stringify(o.backend)}`);
  const now = o.nowSeconds ?? Math.floor(Date.now() / 1000);
  const claims: TokenClaims = {
    sub: o.sub,
    backend: o.backend,
    exp: now + (o.ttlSeconds ?? 60),
    jti: randomBytes(12).toString('base64url'),
    ...(o.data !== undefined ? { data: o.data } : {}),
  };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${PREFIX}.${payload}.${sign(secret, payload).toString('base64url')}`;
}

/** Verify signature and expiry; returns the claims or throws TokenError. */
export function verifyToken(secret: Uint8Array | string, token: string, nowSeconds = Date.now() / 1000): TokenClaims {
  const claims = verifyTokenSignature(secret, token);
  checkExpiry(claims, nowSeconds);
  return claims;
}

/** Throws RELAY_ERR_TOKEN_EXPIRED if the claims have expired. */
export function checkExpiry(claims: TokenClaims, nowSeconds = Date.now() / 1000): void {
  if (claims.exp <= nowSeconds) throw new TokenError('RELAY_ERR_TOKEN_EXPIRED', `token expired ${Math.round(nowSeconds - claims.exp)} s ago`);
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
  let claims: TokenClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as TokenClaims;
  } catch {
    throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', 'token payload is not JSON');
  }
  if (typeof claims.sub !== 'string' || typeof claims.backend !== 'string' || typeof claims.exp !== 'number' || typeof claims.jti !== 'string')
    throw new TokenError('RELAY_ERR_TOKEN_MALFORMED', 'token payload lacks sub, backend, exp or jti');
  return claims;
}
