// src/wasm-codes.ts is generated from the Rust code that defines each number
// (scripts/gen-codes.mjs): it must be current, and its tables must agree
// with the SDK's own names for the same things.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { closeKindOf, type CloseKind } from '../src/connection.js';
import { ERROR_CODES, sendError } from '../src/errors.js';
import { DEFAULT_CHANNELS, KINDS } from '../src/options.js';
import { clientWasm } from '../src/wasm.js';
import { newClient } from '../src/core-config.js';
import { CHANNEL_KIND, CHANNEL_STATS, CLIENT_STATE, CLOSE_KINDS, CONFIG_FIELD, DATAGRAM, EV, PATH_EVENT, SEND_ERRORS, STATS } from '../src/wasm-codes.js';

const GEN = fileURLToPath(new URL('../scripts/gen-codes.mjs', import.meta.url));
const FILE = fileURLToPath(new URL('../src/wasm-codes.ts', import.meta.url));

function gen(...args: string[]) {
  return spawnSync(process.execPath, [GEN, ...args], { encoding: 'utf8' });
}

describe('generated wasm codes', () => {
  it('src/wasm-codes.ts is what scripts/gen-codes.mjs makes of the Rust sources today', () => {
    const r = gen('--check');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('--check fails on a stale file and says how to fix it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-codes-'));
    try {
      const stale = join(dir, 'wasm-codes.ts');
      writeFileSync(stale, readFileSync(FILE, 'utf8').replace('CLOSED: 5', 'CLOSED: 9'));
      const r = gen('--check', '--file', stale);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/is stale .*run node sdk\/scripts\/gen-codes\.mjs/);
      expect(gen('--file', stale).status).toBe(0); // regenerating fixes it
      expect(gen('--check', '--file', stale).status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every close kind the core reports is a CloseKind, and every CloseKind but the SDK\'s own is reported', () => {
    const all: Record<CloseKind, true> = { local: true, peer: true, 'idle-timeout': true, 'handshake-timeout': true, rejected: true, transport: true };
    const fromCore = Object.values(CLOSE_KINDS);
    expect([...fromCore, 'transport'].sort()).toEqual(Object.keys(all).sort());
    for (const [code, kind] of Object.entries(CLOSE_KINDS)) expect(closeKindOf(Number(code))).toBe(kind);
    expect(closeKindOf(0)).toBe('local'); // an unknown code reads as a local close, as before
  });

  it("send results name error codes the SDK documents, and sendError hands the message back", () => {
    for (const [n, code] of Object.entries(SEND_ERRORS)) {
      expect(ERROR_CODES).toHaveProperty(code);
      const data = new Uint8Array([1, 2]);
      const e = sendError(Number(n), data);
      expect(e.code).toBe(code);
      expect(e.data).toBe(data);
    }
    expect(sendError(-99, new Uint8Array(0)).code).toBe('RICOCHET_ERR_NOT_CONNECTED');
  });

  it('channel kinds are numbered in the order of ChannelKind (the default layout)', () => {
    expect(Object.keys(CHANNEL_KIND)).toEqual(DEFAULT_CHANNELS);
    expect(Object.values(CHANNEL_KIND)).toEqual([0, 1, 2, 3]);
    expect(KINDS).toBe(CHANNEL_KIND);
  });

  it('tables are dense and distinct where the SDK loops or compares', () => {
    const distinct = (t: Record<string, number>) => new Set(Object.values(t)).size === Object.keys(t).length;
    for (const t of [EV, DATAGRAM, CLIENT_STATE, PATH_EVENT, CONFIG_FIELD, STATS, CHANNEL_STATS]) expect(distinct(t)).toBe(true);
    expect(EV.NONE).toBe(0);
    expect(PATH_EVENT.NONE).toBe(0);
    expect(DATAGRAM.TAKEN).toBe(0);
  });

  it('the wasm module agrees: every config field number is one it stores, and none beyond', () => {
    const c = new (clientWasm().glue.ConfigInput)();
    try {
      const fields = Object.values(CONFIG_FIELD);
      for (const f of fields) expect(Number.isNaN(c.get(f))).toBe(false);
      expect(c.get(fields.length)).toBeNaN(); // one past the last: unknown to the wasm
      expect(c.get(CONFIG_FIELD.maxDatagramSize)).toBe(1200);
      expect(c.get(CONFIG_FIELD.strictChannels)).toBe(0);
    } finally {
      c.free();
    }
  });

  it('the wasm module agrees: a new client is CONNECTING, and its stats vector has the generated layout', () => {
    const w = clientWasm();
    const cfg = new w.glue.ConfigInput();
    cfg.addChannel(CHANNEL_KIND['reliable-ordered'], 128, 0, 0);
    cfg.addChannel(CHANNEL_KIND.unreliable, 128, 0, 0);
    const client = newClient(w, cfg, 0, new Uint8Array(20).fill(7), new Uint8Array(0));
    cfg.free();
    try {
      expect(client.state()).toBe(CLIENT_STATE.CONNECTING);
      const v = client.stats();
      expect(v[STATS.channels]).toBe(2);
      expect(v.length).toBe(Object.keys(STATS).length + 2 * Object.keys(CHANNEL_STATS).length);
    } finally {
      client.free();
    }
  });
});
