// The soak's relay, in its own process so its memory is measured alone:
// started with --expose-gc by bench/soak/soak.mjs (fork, IPC). It runs the
// relay with every session impaired both ways by the core's simulator.
//   parent → { type: 'sample' }  ← { type: 'sample', memory, impairment } after a full GC
//   parent → { type: 'stop' }    ← exits once the relay has stopped
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestRelay } from '../../relay/dist/testing.js';

const [backend, profile] = process.argv.slice(2);
if (!backend || !profile || typeof globalThis.gc !== 'function') {
  console.error('usage: node --expose-gc relay-process.mjs <backend host:port> <impairment profile>');
  process.exit(2);
}

// As a relay option, so the relay validates the profile name before anything starts.
const relay = await startTestRelay({ backends: [backend], relay: { impairment: profile } }).catch((e) => {
  console.error(`relay-process: ${e.message}`);
  process.exit(2);
});
// How late the relay's event loop ran: tells a starved relay from a network stall.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
process.send({ type: 'ready', httpUrl: relay.httpUrl, tokens: { webtransport: relay.token('soak-webtransport'), websocket: relay.token('soak-websocket') } });

process.on('message', async (m) => {
  if (m.type === 'sample') {
    const loopDelayMaxMs = loopDelay.max / 1e6;
    loopDelay.reset();
    const t0 = performance.now();
    // Twice: the first full GC can leave garbage that finalizers free for the second.
    globalThis.gc();
    globalThis.gc();
    const gcMs = performance.now() - t0;
    process.send({ type: 'sample', gcMs, loopDelayMaxMs, memory: process.memoryUsage(), impairment: relay.relay.impairmentReport() });
  } else if (m.type === 'stop') {
    await relay.stop();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(1)); // the soak driver died: do not linger
