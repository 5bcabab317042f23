// Property tests over the relay's parsers of untrusted input: whatever the
// bytes, each answers with a value or its own error, never a throw of
// anything else. `npm run fuzz` runs them longer (RICOCHET_FUZZ_RUNS).
import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backendAllowed, parseBackend } from '../src/backend-address.js';
import { requestTarget } from '../src/http-guard.js';
import { packetHeader } from '../src/session.js';
import { TokenError, verifyToken } from '../src/token.js';

const SECRET = randomBytes(32).toString('base64url');
const runs = Number(process.env.RICOCHET_FUZZ_RUNS ?? 2000);

/** A JSON-ish value, as a hostile backend or a forger with the secret might sign it. */
const anyJson = fc.jsonValue({ maxDepth: 3 });
const claimsLike = fc.record(
  {
    sub: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    backend: fc.oneof(fc.string(), fc.constantFrom('127.0.0.1:0', '127.0.0.1:65536', '[::1]:1', 'a:*', 'x:-1', '1.2.3.4:00080')),
    iat: fc.oneof(fc.integer(), fc.double(), fc.string()),
    exp: fc.oneof(fc.integer(), fc.double(), fc.string()),
    jti: fc.oneof(fc.string(), fc.base64String()),
    data: fc.oneof(fc.string(), anyJson),
    nbf: fc.oneof(fc.integer(), fc.constant(undefined)),
  },
  { requiredKeys: [] },
);

function sign(payload: string): string {
  const p = Buffer.from(payload).toString('base64url');
  return `rct1.${p}.${createHmac('sha256', SECRET).update(`rct1.${p}`).digest('base64url')}`;
}

describe('parsers of untrusted input', () => {
  it('verifyToken: any signed payload, or any string at all, gives claims or a TokenError', () => {
    const payloads = fc.oneof(anyJson.map((v) => JSON.stringify(v) ?? 'null'), claimsLike.map((v) => JSON.stringify(v)), fc.string());
    fc.assert(
      fc.property(fc.oneof(payloads.map(sign), fc.string({ maxLength: 5000 })), (token) => {
        try {
          const c = verifyToken(SECRET, token);
          expect(parseBackend(c.backend)).not.toBeNull();
        } catch (e) {
          expect(e).toBeInstanceOf(TokenError);
        }
      }),
      { numRuns: runs },
    );
  });

  it('requestTarget: any request target gives a path or null', () => {
    const targets = fc.oneof(fc.string(), fc.webUrl(), fc.constantFrom('//', '///', '/\\', 'http://[', '/%zz', '/ricochet?token=%', '*'));
    fc.assert(
      fc.property(targets, (t) => {
        const r = requestTarget(t);
        if (r) expect(r.path.startsWith('/')).toBe(true);
      }),
      { numRuns: runs },
    );
  });

  it('parseBackend and backendAllowed: any string, never a port outside 1..65535', () => {
    fc.assert(
      fc.property(fc.string(), fc.array(fc.string(), { maxLength: 3 }), (b, allow) => {
        const p = parseBackend(b);
        if (p) expect(p.port >= 1 && p.port <= 65535).toBe(true);
        backendAllowed(allow, b);
      }),
      { numRuns: runs },
    );
  });

  it('packetHeader: any bytes give a header or null', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (d) => {
        const h = packetHeader(d);
        if (h) expect(h.type >= 1 && h.type <= 4 && h.connId >= 0 && h.connId <= 0xffffffff).toBe(true);
      }),
      { numRuns: runs },
    );
  });
});
