// A Server with a relay key admits only clients whose HELLO a relay
// attested, and hands the application the claims the relay verified. The
// relay here is written from WIRE.md ("Relay attestation") with node:crypto,
// and checked against the core's committed vector first.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/clock.js';
import { Connection } from '../src/connection.js';
import { loopbackPair } from '../src/loopback.js';
import { Server, relayAttestKey, type ConnectRequest, type RelayClaims } from '../src/server.js';
import type { Transport } from '../src/transport.js';

interface AttestationVector {
  token_secret: string;
  attest_key: string;
  connection_id: number;
  session_key: string;
  claims: string;
  client_payload: string;
  handshake_payload: string;
}

const vector = JSON.parse(
  readFileSync(new URL('../../wasm/core/tests/vectors/attestation.json', import.meta.url), 'utf8'),
) as AttestationVector;

const SECRET = 'relay token secret';
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));

function varint(n: number): number[] {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return out;
}

const bytes = (b: Uint8Array) => [...varint(b.length), ...b];

function attestKey(secret: string): Uint8Array {
  return new Uint8Array(createHmac('sha256', Buffer.from(secret, 'utf8')).update('ricochet relay attestation v1').digest());
}

/** `"RCA1" ‖ bytes(claims) ‖ bytes(client_payload) ‖ HMAC-SHA256(key, "RCA1" ‖ u32 id ‖ session key ‖ the same bytes)`. */
function attest(key: Uint8Array, id: number, sessionKey: Uint8Array, claims: Uint8Array, payload: Uint8Array): Uint8Array {
  const body = [...bytes(claims), ...bytes(payload)];
  const idLe = new Uint8Array(new Uint32Array([id]).buffer);
  const mac = createHmac('sha256', key).update(Uint8Array.from([0x52, 0x43, 0x41, 0x31, ...idLe, ...sessionKey, ...body])).digest();
  return Uint8Array.from([0x52, 0x43, 0x41, 0x31, ...body, ...mac]);
}

/** What a relay with `key` and these claims forwards in place of a client's HELLO. */
function relayHello(d: Uint8Array, key: Uint8Array, claims: string): Uint8Array {
  const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const id = view.getUint32(1, true);
  const head = 8 + d[7]!;
  const sessionKey = d.subarray(head, head + 16);
  let len = 0;
  let at = head + 16;
  for (let shift = 1; ; shift *= 128) {
    const b = d[at++]!;
    len += (b & 0x7f) * shift;
    if (b < 0x80) break;
  }
  const payload = attest(key, id, sessionKey, new TextEncoder().encode(claims), d.subarray(at, at + len));
  return Uint8Array.from([...d.subarray(0, head + 16), ...bytes(payload)]);
}

/** The server's end of a link, with the relay in front: HELLOs are rewritten. */
function throughRelay(end: Transport, key: Uint8Array, claims: string): Transport {
  return {
    maxDatagramSize: 65507,
    kind: 'relayed',
    send: (d) => end.send(d),
    onDatagram: (h) => end.onDatagram((d) => h(d[0] === 0x01 ? relayHello(d, key, claims) : d)),
    onClose: (h) => end.onClose(h),
    close: () => end.close(),
  };
}

/** A client behind the relay (or straight to the server with `claims` null). */
function connectVia(server: Server, clock: VirtualClock, claims: string | null, handshake = 'join'): Connection {
  const { client, server: end } = loopbackPair({ clock });
  server.attach(claims === null ? end : throughRelay(end, attestKey(SECRET), claims));
  return new Connection(client, { clock, handshake: new TextEncoder().encode(handshake) });
}

describe('relay attestation', () => {
  it("matches the core's committed vector, key and payload", () => {
    expect(hex(attestKey(vector.token_secret))).toBe(vector.attest_key);
    expect(hex(relayAttestKey(vector.token_secret))).toBe(vector.attest_key);
    const got = attest(unhex(vector.attest_key), vector.connection_id, unhex(vector.session_key), new TextEncoder().encode(vector.claims), unhex(vector.client_payload));
    expect(hex(got)).toBe(vector.handshake_payload);
  });

  it('a client through the relay connects, and the server sees its claims and own payload', () => {
    const clock = new VirtualClock();
    const requests: ConnectRequest[] = [];
    const connected: { id: number; claims: RelayClaims | null }[] = [];
    const server = new Server({ clock, relaySecret: SECRET, onConnectRequest: (r) => requests.push(r) > 0 });
    server.on('connection', (c) => connected.push(c));
    const conn = connectVia(server, clock, '{"sub":"alice","data":"room=7"}', 'join room 7');
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    expect(requests).toHaveLength(1);
    expect(new TextDecoder().decode(requests[0]!.payload)).toBe('join room 7');
    expect(requests[0]!.claims).toEqual({ sub: 'alice', data: 'room=7' });
    expect(connected).toEqual([{ id: conn.id, claims: { sub: 'alice', data: 'room=7' } }]);
    expect(server.claims(conn.id)).toEqual({ sub: 'alice', data: 'room=7' });
  });

  it('a client that bypasses the relay is rejected, and no request is raised', () => {
    const clock = new VirtualClock();
    let requests = 0;
    const server = new Server({ clock, relayKey: attestKey(SECRET), onConnectRequest: () => ++requests > 0 });
    const conn = connectVia(server, clock, null);
    expect(clock.runUntil(() => conn.state === 'closed', 2_000_000)).toBe(true);
    expect(conn.closeInfo).toMatchObject({ kind: 'rejected', reason: 'not admitted by a relay' });
    expect(requests).toBe(0);
  });

  for (const [name, claims] of [
    ['not JSON', 'sub=alice'],
    ['without a string sub', '{"data":"x"}'],
    ['with data that is not a string', '{"sub":"a","data":7}'],
    ['an array', '["alice"]'],
  ] as const) {
    it(`attested claims that are ${name} are rejected as not admitted`, () => {
      const clock = new VirtualClock();
      let requests = 0;
      const server = new Server({ clock, relaySecret: SECRET, onConnectRequest: () => ++requests > 0 });
      const conn = connectVia(server, clock, claims);
      expect(clock.runUntil(() => conn.state === 'closed', 2_000_000)).toBe(true);
      expect(conn.closeInfo).toMatchObject({ kind: 'rejected', reason: 'not admitted by a relay' });
      expect(requests).toBe(0);
    });
  }

  it('without a relay key, requests carry no claims', () => {
    const clock = new VirtualClock();
    const requests: ConnectRequest[] = [];
    const server = new Server({ clock, onConnectRequest: (r) => requests.push(r) > 0 });
    const conn = connectVia(server, clock, null, 'direct');
    expect(clock.runUntil(() => conn.state === 'open', 2_000_000)).toBe(true);
    expect(requests.map((r) => [new TextDecoder().decode(r.payload), r.claims])).toEqual([['direct', null]]);
    expect(server.claims(conn.id)).toBeNull();
  });

  it('relay options are validated', () => {
    const bad = (o: object) => () => new Server({ clock: new VirtualClock(), ...o });
    const code = expect.objectContaining({ code: 'RICOCHET_ERR_INVALID_OPTIONS' });
    expect(bad({ relaySecret: '' })).toThrowError(code);
    expect(bad({ relayKey: new Uint8Array(31) })).toThrowError(code);
    expect(bad({ relaySecret: 's', relayKey: new Uint8Array(32) })).toThrowError(code);
  });
});
