#!/usr/bin/env node
// Node bots for the relay-fleet specs: many SDK connections in one process,
// over WebSocket through the TCP balancer (Node has no WebTransport). Runs
// inside the client namespace (topology.ts startBots).
//
// Usage: node e2e/fleet/bots.mjs '<json>' with { tokens, webSocketUrl, rateHz, connOptions, concurrency, label }.
// stdout: JSON lines; {"event":"open",...} once every session is open (or failed).
// stdin: one command per line: report | stop-sending | drain <ms> | close;
// each answers with one JSON line {"event":"<command>", ...}. Exits on stdin EOF.
import { createInterface } from 'node:readline';
import { WebSocket } from 'ws';
import { Connection, WebSocketTransport } from '@ricochet/sdk';
import { createPlayers } from '../pages/fleet-session.js';

const o = JSON.parse(process.argv[2]);
const out = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
const open = async (token) => ({
  kind: 'websocket',
  transport: await WebSocketTransport.connect(`${o.webSocketUrl}?token=${encodeURIComponent(token)}`, { WebSocket }),
});
const players = createPlayers({ Connection, open, tokens: o.tokens, rateHz: o.rateHz, connOptions: o.connOptions, concurrency: o.concurrency, label: o.label ?? 'bot' });
out({ event: 'open', ...(await players.open()) });
const lines = createInterface({ input: process.stdin });
lines.on('line', async (l) => {
  const [cmd, arg] = l.trim().split(/\s+/);
  if (cmd === 'report') out({ event: 'report', sessions: players.report() });
  else if (cmd === 'stop-sending') out({ event: 'stop-sending', ok: players.stopSending() ?? true });
  else if (cmd === 'drain') out({ event: 'drain', ok: (await players.drain(Number(arg ?? 10_000))) ?? true });
  else if (cmd === 'close') out({ event: 'close', ok: players.closeAll() ?? true });
});
lines.on('close', () => {
  players.closeAll();
  setTimeout(() => process.exit(0), 300);
});
