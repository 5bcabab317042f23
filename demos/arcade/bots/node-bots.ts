// Node bots: join rooms through the page server and the relay (WebSocket,
// since Node has no WebTransport), wander and shoot with the browser's own
// code path (client/net.ts, prediction and input redundancy). For filling a
// room while you play, and for the browser tests. The load benchmark uses
// the Rust bots (server/src/bots.rs): they cost a tenth of the CPU.
//
//   node demos/arcade/dist/node-bots.mjs --url http://127.0.0.1:8000 --room 0 --bots 4 --seconds 60
// (--seconds 0: until stopped).
import { parseArgs } from 'node:util';
import { init } from '@ricochet/sdk/slim';
import { WebSocket } from 'ws';
import { encode, type Message } from '../protocol/index.js';
import { GameState } from '../client/game.js';
import { join } from '../client/net.js';

const KEYS = [0, 1, 2, 4, 8, 5, 9, 6, 10];

async function bot(url: string, room: number, name: string, until: number) {
  const game = new GameState();
  const link = await join({ baseUrl: url, room, name, force: 'websocket', WebSocket: WebSocket as never }, (m: Message) => game.apply(m));
  let keys = 0;
  let aim = Math.random() * Math.PI * 2;
  let inputs = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const p = game.predictor;
      if (Date.now() > until || link.conn.state !== 'open') {
        clearInterval(timer);
        resolve();
        return;
      }
      if (!p) return;
      if (Math.random() < 0.02) keys = KEYS[Math.floor(Math.random() * KEYS.length)]!;
      // Aim at the nearest other player, if any.
      const me = p.state;
      const others = game.view(performance.now()).players.filter((o) => o.alive);
      const target = others.sort((a, b) => Math.hypot(a.x - me.x, a.y - me.y) - Math.hypot(b.x - me.x, b.y - me.y))[0];
      aim = target ? Math.atan2(target.y - me.y, target.x - me.x) : aim + 0.05;
      const msg = game.input({ keys, fire: Math.random() < 0.3, aim });
      if (msg) link.conn.send('input', encode(msg));
      inputs++;
    }, 1000 / 60);
  });
  link.conn.close(1000, 'bot done');
  return { snapshots: game.snapshots, inputs, kills: game.roster.get(game.me)?.kills ?? 0 };
}

async function main() {
  const { values } = parseArgs({
    options: { url: { type: 'string' }, room: { type: 'string', default: '0' }, bots: { type: 'string', default: '4' }, seconds: { type: 'string', default: '60' } },
  });
  if (!values.url) throw new Error('--url of the arcade page server is required');
  await init(new URL(import.meta.resolve('@ricochet/sdk/ricochet_wasm.wasm')));
  const seconds = Number(values.seconds);
  const until = seconds > 0 ? Date.now() + seconds * 1000 : Infinity;
  const n = Number(values.bots);
  const results = await Promise.all(Array.from({ length: n }, (_, i) => bot(values.url!, Number(values.room), `node-bot-${i + 1}`, until)));
  console.log(
    JSON.stringify({
      event: 'node-bots',
      bots: n,
      snapshotsPerBotPerSecond: +(results.reduce((a, r) => a + r.snapshots, 0) / n / Math.max(seconds, 1e-9)).toFixed(1),
      inputsPerBotPerSecond: +(results.reduce((a, r) => a + r.inputs, 0) / n / Math.max(seconds, 1e-9)).toFixed(1),
      kills: results.reduce((a, r) => a + r.kills, 0),
    }),
  );
}

main().catch((e: Error) => {
  console.error(`node-bots: ${e.message}`);
  process.exit(1);
});
