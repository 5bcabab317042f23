// Node ESM consumer: imports every exported subpath of @ricochet/sdk,
// @ricochet/relay and @ricochet/game (read from the installed package.json files, so new
// subpaths are covered), then exchanges a message with the native echo
// server over UDP (default entry, and the slim entry after init()) and over
// WebSocket through an in-process relay from @ricochet/relay/testing.
// Env: ECHO_PORT. Prints one line: RESULT <json>.
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';

const result = { subpaths: {}, exchanges: {} };
const deadline = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref())]);

async function load(spec, key) {
  if (key.includes('*')) throw new Error('pattern subpath: not enumerable, list it in the test');
  if (key.endsWith('.json')) return { kind: 'json', name: (await import(spec, { with: { type: 'json' } })).default.name };
  if (key.endsWith('.wasm')) return { kind: 'wasm', valid: WebAssembly.validate(readFileSync(new URL(import.meta.resolve(spec)))) };
  return { kind: 'module', exports: Object.keys(await import(spec)).length };
}

for (const name of ['@ricochet/sdk', '@ricochet/relay', '@ricochet/game']) {
  const { exports: map } = JSON.parse(readFileSync(join(process.cwd(), 'node_modules', name, 'package.json'), 'utf8'));
  for (const key of Object.keys(map ?? { '.': null })) {
    const spec = name + key.slice(1);
    try {
      result.subpaths[spec] = { ok: true, ...(await load(spec, key)) };
    } catch (e) {
      result.subpaths[spec] = { ok: false, code: e.code ?? null, error: e.message };
    }
  }
}

async function exchange(sdk, transport, label) {
  const conn = new sdk.Connection(transport, { handshake: 'packaging', channels: [{ kind: 'reliable-ordered', name: 'chat' }] });
  await deadline(conn.ready, 10_000, `${label}: ready`);
  const echo = new Promise((r) => conn.on('message', ({ data }) => r(new TextDecoder().decode(data))));
  conn.send('chat', new TextEncoder().encode(`hello over ${label}`));
  const got = await deadline(echo, 10_000, `${label}: echo`);
  conn.close();
  return got;
}

async function udp(sdk, label) {
  const sock = createSocket('udp4');
  await new Promise((r) => sock.bind(0, '127.0.0.1', r));
  try {
    return await exchange(sdk, new sdk.UdpTransport(sock, '127.0.0.1', Number(process.env.ECHO_PORT)), label);
  } finally {
    sock.close();
  }
}

async function attempt(label, fn) {
  try {
    result.exchanges[label] = { ok: true, echo: await fn() };
  } catch (e) {
    result.exchanges[label] = { ok: false, error: e.message };
  }
}

const sdk = await import('@ricochet/sdk');
await attempt('udp (default entry)', () => udp(sdk, 'udp (default entry)'));
await attempt('udp (slim entry)', async () => {
  const slim = await import('@ricochet/sdk/slim');
  await slim.init();
  return udp(slim, 'udp (slim entry)');
});
await attempt('websocket (@ricochet/relay/testing)', async () => {
  const { startTestRelay } = await import('@ricochet/relay/testing');
  const relay = await startTestRelay({ backends: [`127.0.0.1:${process.env.ECHO_PORT}`], relay: { webTransport: false } });
  try {
    const t = await sdk.WebSocketTransport.connect(`${relay.addresses.webSocketUrl}?token=${relay.token()}`, { WebSocket });
    return await exchange(sdk, t, 'websocket (@ricochet/relay/testing)');
  } finally {
    await relay.stop();
  }
});
console.log(`RESULT ${JSON.stringify(result)}`);
process.exit(0);
