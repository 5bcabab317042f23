#!/usr/bin/env node
// `npm start`: installs and builds what is missing (toolchains, wasm, SDK,
// relay, game server, page bundle), starts the arcade and prints its URL.
// Stays up until Ctrl-C, then stops the game server and the relay.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { build } from '../../../scripts/build.mjs';
import { ROOT } from '../../../scripts/setup.mjs';
import { NODE_BOTS, buildArcade } from './build.mjs';

function node(script) {
  const r = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${script} failed`);
}

async function main() {
  console.log('[arcade] building (each step skips itself when up to date)…');
  build(); // setup, wasm, SDK
  node(join(ROOT, 'relay', 'native', 'build.mjs')); // WebTransport addon
  node(join(ROOT, 'relay', 'scripts', 'build.mjs'));
  await buildArcade();
  // Imported only now: the relay package exists once it is built.
  const { startArcade } = await import('./stack.mjs');
  const port = Number(process.env.ARCADE_PORT ?? 8000);
  const arcade = await startArcade({ port, shards: Number(process.env.ARCADE_SHARDS ?? 1) });
  console.log(`\n  Ricochet Arcade is running: ${arcade.url}\n`);
  console.log(`  Open it in two browser tabs (or ${arcade.url}?room=2&name=you for another room).`);
  console.log(`  relay ${arcade.relayHttp} · game server udp ${arcade.gamePorts.join(', ')} · Ctrl-C stops\n`);
  // A few Node bots in room 1 so a lone player has opponents (ARCADE_BOTS=0: none).
  const botCount = Number(process.env.ARCADE_BOTS ?? 3);
  const bots =
    botCount > 0
      ? spawn(process.execPath, [NODE_BOTS, '--url', arcade.url.replace(/\/$/, ''), '--room', '0', '--bots', String(botCount), '--seconds', '0'], { stdio: ['ignore', 'ignore', 'inherit'] })
      : null;
  if (bots) console.log(`  ${botCount} bots play in room 1 (ARCADE_BOTS=0 for none)\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log('\n[arcade] stopping…');
    if (bots && bots.exitCode === null) {
      bots.kill('SIGTERM');
      await new Promise((r) => bots.once('exit', r));
    }
    await arcade.stop();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((e) => {
  console.error(`[arcade] ERROR: ${e.message}`);
  process.exit(1);
});
