// Node CommonJS consumer: require()s every exported subpath of @ricochet/sdk,
// @ricochet/relay and @ricochet/game (read from the installed package.json files; an
// import-only subpath is reported with its error code for the test to judge),
// then exchanges a message with the native echo server over WebSocket through
// the relay CLI (RELAY_WS_URL, TOKEN) and over UDP (ECHO_PORT).
// Prints one line: RESULT <json>.
const { createSocket } = require('node:dgram');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const WebSocket = require('ws');

const result = { subpaths: {}, exchanges: {} };
const deadline = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref())]);

function load(spec, key) {
  if (key.includes('*')) throw new Error('pattern subpath: not enumerable, list it in the test');
  if (key.endsWith('.json')) return { kind: 'json', name: require(spec).name };
  if (key.endsWith('.wasm')) return { kind: 'wasm', valid: WebAssembly.validate(readFileSync(require.resolve(spec))) };
  return { kind: 'module', exports: Object.keys(require(spec)).length };
}

for (const name of ['@ricochet/sdk', '@ricochet/relay', '@ricochet/game']) {
  const { exports: map } = JSON.parse(readFileSync(join(process.cwd(), 'node_modules', name, 'package.json'), 'utf8'));
  for (const key of Object.keys(map ?? { '.': null })) {
    const spec = name + key.slice(1);
    try {
      result.subpaths[spec] = { ok: true, ...load(spec, key) };
    } catch (e) {
      result.subpaths[spec] = { ok: false, code: e.code ?? null, error: e.message.split('\n')[0] };
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

async function attempt(label, fn) {
  try {
    result.exchanges[label] = { ok: true, echo: await fn() };
  } catch (e) {
    result.exchanges[label] = { ok: false, error: e.message };
  }
}

async function main() {
  const sdk = require('@ricochet/sdk');
  await attempt('websocket (relay CLI)', async () => {
    const t = await sdk.WebSocketTransport.connect(`${process.env.RELAY_WS_URL}?token=${process.env.TOKEN}`, { WebSocket });
    return exchange(sdk, t, 'websocket (relay CLI)');
  });
  await attempt('udp', async () => {
    const sock = createSocket('udp4');
    await new Promise((r) => sock.bind(0, '127.0.0.1', r));
    try {
      return await exchange(sdk, new sdk.UdpTransport(sock, '127.0.0.1', Number(process.env.ECHO_PORT)), 'udp');
    } finally {
      sock.close();
    }
  });
  console.log(`RESULT ${JSON.stringify(result)}`);
  process.exit(0);
}
main();
