// The browser client module through the SDK's own bindings (src/client-glue.ts),
// against the full module's server: what browsers run, here in Node.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type * as Generated from '../wasm/ricochet_client.js';
import { Client, ConfigInput, loadClient, protocolVersion } from '../src/client-glue.js';
import { coreConfig, newClient } from '../src/core-config.js';
import { CorePort, Heap } from '../src/heap.js';
import { fullWasm, type Bound, type ClientGlue } from '../src/wasm.js';
import { EV } from '../src/wasm-codes.js';
import { check, payload } from './payload.js';

/** Every string-keyed member of T (the generated classes also have Symbol.dispose). */
type Methods<T> = { [K in Extract<keyof T, string>]: T[K] };
// Compile-time: each generated method exists here with the same type.
const clientMatches = (c: Client): Methods<InstanceType<typeof Generated.Client>> => c;
const configMatches = (c: ConfigInput): Methods<InstanceType<typeof Generated.ConfigInput>> => c;

async function clientModule(): Promise<Bound<ClientGlue>> {
  const exports = await loadClient(readFileSync(new URL('../wasm/ricochet_client_bg.wasm', import.meta.url)));
  return { glue: { Client, ConfigInput, protocolVersion } as unknown as ClientGlue, heap: new Heap(exports.memory) };
}

describe('the client module through the SDK’s own bindings', () => {
  it('connects to the full module’s server, sends, reads stats, refuses and closes with a reason', async () => {
    const w = await clientModule();
    expect(protocolVersion()).toBe(3);
    const cfg = coreConfig(w.glue, { channels: ['reliable-ordered', 'unreliable'] }, 1200, true);
    configMatches(cfg as unknown as ConfigInput);
    const client = newClient(w, cfg, 0, new Uint8Array(20).fill(9), new TextEncoder().encode('hi'));
    cfg.free();
    clientMatches(client as unknown as Client);
    const full = fullWasm('test');
    const server = new full.glue.Server(new full.glue.ConfigInput(), new Uint8Array(32).fill(3));
    const cp = new CorePort(w.heap, client);
    const sp = new CorePort(full.heap, server);
    const got: Uint8Array[] = [];
    let closedWith: string | null = null;
    let acked = 0;
    let now = 0;
    const step = () => {
      now += 1000;
      for (let d = cp.nextDatagram(now, 32); d !== null; d = cp.nextDatagram(now, 32)) server.handleDatagram(now, sp.writeIn(d));
      for (let k = sp.nextEvent(); k !== EV.NONE; k = sp.nextEvent()) {
        if (k === EV.CONNECT_REQUEST) server.accept(now, sp.evConn);
        if (k === EV.MESSAGE) got.push(sp.eventBytes());
        if (k === EV.CLOSED) closedWith = sp.eventText();
      }
      for (let d = sp.nextDatagram(now, 32); d !== null; d = sp.nextDatagram(now, 32)) client.handleDatagram(now, cp.writeIn(d));
      for (let k = cp.nextEvent(); k !== EV.NONE; k = cp.nextEvent()) if (k === EV.ACKED) acked++;
      if (client.pollTimeout() >= 0 && client.pollTimeout() <= now) client.handleTimeout(now);
      if (server.pollTimeout() >= 0 && server.pollTimeout() <= now) server.handleTimeout(now);
    };
    while (client.state() !== 1 && now < 1e6) step();
    expect(client.state()).toBe(1);
    for (let i = 0; i < 40; i++) expect(client.send(now, 0, cp.writeIn(payload(i, 100 + i * 97)))).toBeGreaterThanOrEqual(0);
    while (acked < 40 && now < 3e6) step();
    expect(got.map(check)).toEqual([...Array(40).keys()]);
    const stats = client.stats();
    expect(stats.length).toBeGreaterThan(20);
    expect(stats.some((v) => v > 0)).toBe(true);
    expect(client.setMaxDatagramSize(now, 1200)).toBe(true);
    const bad = client.setFec(1, 5);
    expect(cp.readText(bad)).toMatch(/^fec\.budget: need 0\.01\.\.=3\.0/);
    client.close(now, 7, cp.writeIn(new TextEncoder().encode('bye ✓')));
    while (closedWith === null && now < 4e6) step();
    expect(closedWith).toBe('bye ✓');
    client.free();
    server.free();
  });

  it('refuses a bad config and an unknown channel kind with plain values', async () => {
    const w = await clientModule();
    const cfg = new ConfigInput();
    expect(cfg.addChannel(9, 128, 0, 0)).toBe(false);
    cfg.set(0, 50); // max_datagram_size below the floor
    const n = cfg.check(0);
    expect(w.heap.readText(cfg.ioReserve(0), n)).toMatch(/^invalid config: max_datagram_size: need 128\.\.=65507 bytes, got 50$/);
    cfg.free();
  });
});
