import { describe, expect, it } from 'vitest';
import { mintToken, verifyToken } from '../src/token.js';

const SECRET = 'test-secret-0123456789';

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

  it('mint refuses a backend that is not host:port', () => {
    expect(() => mintToken(SECRET, { sub: 'a', backend: 'nohost' })).toThrowError(/host:port/);
  });
});
