import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { mintToken, verifyToken, verifyTokenSignature } from '../src/token.js';

const SECRET = randomBytes(32).toString('base64url');

describe('connect tokens', () => {
  it('round-trips claims', () => {
    const t = mintToken(SECRET, { sub: 'alice', backend: '127.0.0.1:4000', data: 'room=7', ttlSeconds: 30, nowSeconds: 1000 });
    const c = verifyToken(SECRET, t, 1010);
    expect(c).toMatchObject({ sub: 'alice', backend: '127.0.0.1:4000', data: 'room=7', exp: 1030 });
    expect(c.jti).toMatch(/^[\w-]{16}$/);
  });

  it('refuses a wrong secret, a tampered payload, an expired token and junk, each with its code', () => {
    const t = mintToken(SECRET, { sub: 'a', backend: '127.0.0.1:4000', nowSeconds: 1000 });
    expect(() => verifyToken('another-secret-xxxxxxx', t, 1001)).toThrowError(expect.objectContaining({ code: 'RELAY_ERR_TOKEN_SIGNATURE' }));
    const [p, payload, sig] = t.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), backend: '10.0.0.1:22' })).toString('base64url');
    expect(() => verifyToken(SECRET, `${p}.${forged}.${sig}`, 1001)).toThrowError(expect.objectContaining({ code: 'RELAY_ERR_TOKEN_SIGNATURE' }));
    expect(() => verifyToken(SECRET, t, 2000)).toThrowError(expect.objectContaining({ code: 'RELAY_ERR_TOKEN_EXPIRED' }));
    for (const junk of ['', 'abc', 'rct1..', 'rct2.a.b', 'x'.repeat(5000)])
      expect(() => verifyToken(SECRET, junk, 1001)).toThrowError(expect.objectContaining({ code: expect.stringMatching(/^RELAY_ERR_TOKEN_/) }));
  });

  it('mint refuses a backend that is not host:port with a port in 1..65535', () => {
    for (const backend of ['nohost', '127.0.0.1:0', '127.0.0.1:99999', '127.0.0.1:abc', 'a b:4000'])
      expect(() => mintToken(SECRET, { sub: 'a', backend })).toThrowError(/host:port/);
    expect(mintToken(SECRET, { sub: 'a', backend: '[::1]:4000' })).toMatch(/^rct1\./);
  });

  it('refuses signed payloads of the wrong shape: not an object, unknown or mistyped claims, a bad backend', () => {
    const sign = (payload: unknown) => {
      const p = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `rct1.${p}.${createHmac('sha256', SECRET).update(`rct1.${p}`).digest('base64url')}`;
    };
    const good = { sub: 'a', backend: '127.0.0.1:4000', iat: 1000, exp: 1060, jti: 'abcdefgh12' };
    expect(verifyTokenSignature(SECRET, sign(good))).toEqual(good);
    const bad: unknown[] = [null, [good], 7, 'x', { ...good, admin: true }, { ...good, sub: 5 }, { ...good, sub: '' }, { ...good, exp: '1060' }, { ...good, exp: 1.5 }];
    bad.push({ ...good, iat: undefined }, { ...good, jti: 'short' }, { ...good, data: { x: 1 } }, { ...good, data: 'x'.repeat(1025) }, { ...good, backend: '127.0.0.1:0' });
    for (const payload of bad)
      expect(() => verifyTokenSignature(SECRET, sign(payload)), JSON.stringify(payload)).toThrowError(expect.objectContaining({ code: 'RELAY_ERR_TOKEN_MALFORMED' }));
  });

  it('honours not-before with leeway for clock skew, and refuses lifetimes over the maximum', () => {
    const early = mintToken(SECRET, { sub: 'a', backend: '127.0.0.1:4000', nowSeconds: 1000, notBeforeSeconds: 100, ttlSeconds: 300 });
    expect(() => verifyToken(SECRET, early, 1050)).toThrowError(expect.objectContaining({ code: 'RELAY_ERR_TOKEN_NOT_YET_VALID' }));
    expect(verifyToken(SECRET, early, 1075).sub).toBe('a'); // within the 30 s leeway of nbf 1100
    // A backend clock 20 s ahead: iat is in the relay's future, forgiven.
    expect(verifyToken(SECRET, mintToken(SECRET, { sub: 'a', backend: '127.0.0.1:4000', nowSeconds: 1020 }), 1000).sub).toBe('a');
    const long = mintToken(SECRET, { sub: 'a', backend: '127.0.0.1:4000', nowSeconds: 1000, ttlSeconds: 7200 });
    expect(() => verifyToken(SECRET, long, 1001)).toThrowError(/lifetime 7200 s exceeds 3600 s/);
    expect(verifyToken(SECRET, long, 1001, { leewaySeconds: 30, maxLifetimeSeconds: 7200 }).sub).toBe('a');
  });
});
