// The relay's SipHash-2-4 and tag computation against the reference vector
// and the core's committed wire vectors (wasm/core/tests/vectors/wire.json).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SessionProof, dataTag, directionKey, expandPacketNumber, siphash24 } from '../src/session-proof.js';

const K = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex');
/** The server nonce N the vectors' client → server tags are sealed under (WIRE.md). */
const N = Buffer.from('a0a1a2a3a4a5a6a7', 'hex');
const vectors = JSON.parse(readFileSync(new URL('../../wasm/core/tests/vectors/wire.json', import.meta.url), 'utf8')) as {
  name: string;
  hex: string;
  sealed?: { direction: string; number: string };
}[];

describe('session proof', () => {
  it('computes SipHash-2-4 as the reference does', () => {
    expect(siphash24(K, Buffer.from([...Array(15).keys()])).toString(16)).toBe('a129ca6149be45e5');
    expect(siphash24(K, Buffer.alloc(0)).toString(16)).toBe('726fdb47dd0e0e31');
  });

  it('derives the client-to-server key and the DATA tags of the core vectors', () => {
    expect(directionKey(K, 1, N).toString('hex')).toBe('25383fa27eb94628e7ed950e8e11ac8c');
    const data = vectors.filter((v) => v.sealed?.direction === 'client_to_server' && v.hex.startsWith('04'));
    expect(data.length).toBeGreaterThan(2);
    for (const v of data) {
      const d = Buffer.from(v.hex, 'hex');
      expect(dataTag(directionKey(K, 1, N), d.readUInt32LE(1), BigInt(v.sealed!.number), d.length).toString('hex'), v.name).toBe(d.subarray(7, 15).toString('hex'));
    }
  });

  it('recovers full packet numbers from their low 16 bits, and proves only tagged packets', () => {
    expect(expandPacketNumber(4464, 70_000)).toBe(70_000);
    expect(expandPacketNumber(0xffff, 0x1_0001)).toBe(0xffff);
    const proof = new SessionProof(K);
    const ping0 = Buffer.from(vectors.find((v) => v.name === 'data_ping')!.hex, 'hex');
    expect(proof.proves(ping0, ping0.readUInt32LE(1)), 'no WELCOME seen: no key(1) yet').toBe(false);
    // A WELCOME forwarded from the server carries N (bytes 15..23); a forged one (bad tag) is ignored.
    const welcome = Buffer.from(vectors.find((v) => v.name === 'welcome')!.hex, 'hex');
    expect(welcome.subarray(15, 23).equals(N)).toBe(true);
    proof.observeDown(Buffer.concat([welcome.subarray(0, 7), Buffer.alloc(8), N]));
    expect(proof.proves(ping0, ping0.readUInt32LE(1)), 'a forged WELCOME completes nothing').toBe(false);
    proof.observeDown(welcome);
    const ping = Buffer.from(vectors.find((v) => v.name === 'data_ping')!.hex, 'hex');
    expect(proof.proves(ping, ping.readUInt32LE(1))).toBe(true);
    const forged = Buffer.from(ping);
    forged[10]! ^= 1;
    expect(proof.proves(forged, forged.readUInt32LE(1))).toBe(false);
  });
});
