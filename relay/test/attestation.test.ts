// The relay's HELLO attestation: byte-exact against the core's vector, and
// end to end, a game server that trusts the relay learns who connected.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Connection, Server, WebSocketTransport, type RelayClaims } from '@ricochet/sdk';
import { attestHello, attestPayload, attestationKey, parseHello, type ParsedHello } from '../src/attestation.js';
import { createLogger } from '../src/log.js';
import { DEFAULTS } from '../src/options.js';
import { Relay } from '../src/relay.js';
import { mintToken } from '../src/token.js';
import { echoGame, hello, waitFor } from './hostile-helpers.js';

const vector = JSON.parse(readFileSync(new URL('../../wasm/core/tests/vectors/attestation.json', import.meta.url), 'utf8')) as Record<string, string | number>;
const hex = (s: unknown) => Buffer.from(String(s), 'hex');

describe('relay attestation', () => {
  it('derives the key and builds the handshake payload exactly as the core vector says', () => {
    const key = attestationKey(String(vector.token_secret));
    expect(key.toString('hex')).toBe(vector.attest_key);
    const payload = attestPayload(key, Number(vector.connection_id), hex(vector.session_key), Buffer.from(String(vector.claims)), hex(vector.client_payload));
    expect(payload.toString('hex')).toBe(vector.handshake_payload);
  });

  it('rewrites a HELLO around the attestation, keeps its header and key, and pads it', () => {
    const h = hello(0x12345678);
    const out = attestHello(parseHello(h) as ParsedHello, attestationKey('s'.repeat(32)), Buffer.from('{"sub":"a"}'));
    const parsed = parseHello(out);
    expect(typeof parsed).not.toBe('string');
    const p = parsed as Exclude<ReturnType<typeof parseHello>, string>;
    expect(p.connId).toBe(0x12345678);
    expect(Buffer.from(p.key).equals(Buffer.from(h.subarray(9, 25)))).toBe(true);
    expect(Buffer.from(p.payload.subarray(0, 4)).toString()).toBe('RCA1');
    expect(out.length).toBeGreaterThanOrEqual(128);
  });

  it('names what is wrong with a datagram that is no version-3 HELLO', () => {
    const old = hello(1);
    old[5] = 2;
    expect(parseHello(old)).toMatch(/unsupported protocol version 2/);
    expect(parseHello(hello(1).subarray(0, 20))).toMatch(/truncated/);
    const padded = hello(1);
    padded[100] = 7;
    expect(parseHello(padded)).toMatch(/padding/);
  });
});

describe('a game server behind the relay', () => {
  const SECRET = randomBytes(32).toString('base64url');
  let relay: Relay;
  let echo: Awaited<ReturnType<typeof echoGame>>;
  let game: Server;
  let backend: string;
  const seen: { id: number; claims: RelayClaims | null }[] = [];

  beforeAll(async () => {
    echo = await echoGame({ relaySecret: SECRET });
    ({ game, backend } = echo);
    game.on('connection', (c) => seen.push(c));
    relay = new Relay({ ...DEFAULTS, httpPort: 0, wtPort: -1, tokenSecret: SECRET, allowBackends: [backend] }, createLogger('silent'));
    await relay.start();
  });

  afterAll(async () => {
    await relay.stop();
    echo.close();
  });

  it('learns the sub and data the relay verified', async () => {
    const t = mintToken(SECRET, { sub: 'alice', backend, data: 'room=7' });
    const conn = new Connection(await WebSocketTransport.connect(`${relay.addresses().webSocketUrl}?token=${t}`, { WebSocket: WebSocket as never }));
    await conn.ready;
    expect(await waitFor(() => seen.some((c) => c.id === conn.id))).toBe(true);
    expect(seen.find((c) => c.id === conn.id)?.claims).toEqual({ sub: 'alice', data: 'room=7' });
    expect(game.claims(conn.id)).toEqual({ sub: 'alice', data: 'room=7' });
    conn.close();
  });
});
