// The arcade under Agones (node --test), against Agones' own SDK server in local mode
// (`sdk-server --local`, built from Agones' source; see deploy/README.md), never a stand-in:
//   - gameserver.yaml parses as a GameServer in Agones' code, and fleet.yaml stamps out the same spec;
//   - both validate against Agones' CustomResourceDefinitions;
//   - arcade-server with gameserver.yaml's arguments marks itself Ready and sends Health pings;
//   - without --agones it never calls the sidecar (the arcade runs as before);
//   - with --agones and no sidecar it exits non-zero, saying why.
// The SDK server and the CRDs: ~/.cache/ricochet/tools/agones-sdk/ (build-sdk-server.mjs; the SDK
// server also from $RICOCHET_AGONES_SDK_SERVER); without them the tests that need them are
// skipped, and say so.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseYaml, validateCustomResources } from '../kubernetes/manifests.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const ARCADE = join(ROOT, 'demos', 'arcade', 'server', 'target', 'release', 'arcade-server');
const AGONES_TOOLS = join(process.env.RICOCHET_CACHE ?? join(homedir(), '.cache', 'ricochet'), 'tools', 'agones-sdk');
const SDK_SERVER = process.env.RICOCHET_AGONES_SDK_SERVER ?? join(AGONES_TOOLS, 'sdk-server');
const CRDS = join(AGONES_TOOLS, 'install.yaml');
const NO_SDK = existsSync(SDK_SERVER) ? false : `no Agones SDK server at ${SDK_SERVER} (node deploy/agones/build-sdk-server.mjs AGONES_SOURCE: deploy/README.md)`;
const NO_CRDS = existsSync(CRDS) ? false : `no Agones CustomResourceDefinitions at ${CRDS} (node deploy/agones/build-sdk-server.mjs AGONES_SOURCE: deploy/README.md)`;
const [GAMESERVER] = parseYaml(readFileSync(join(HERE, 'gameserver.yaml'), 'utf8'));
const [FLEET] = parseYaml(readFileSync(join(HERE, 'fleet.yaml'), 'utf8'));

const children = [];
after(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

function freePort() {
  return new Promise((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => r(port));
    });
  });
}

/** A child process whose output is collected; `exited` resolves with { code, signal }. */
function start(cmd, args, env = {}) {
  const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(p);
  p.output = '';
  p.stdout.on('data', (d) => (p.output += d));
  p.stderr.on('data', (d) => (p.output += d));
  p.exited = new Promise((r) => p.on('exit', (code, signal) => r({ code, signal })));
  return p;
}

async function until(what, fn, ms = 15_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Agones' local SDK server holding gameserver.yaml; resolves once its HTTP gateway answers. */
async function startSdkServer() {
  const [http, grpc, health] = [await freePort(), await freePort(), await freePort()];
  const p = start(SDK_SERVER, ['--local', '--file', join(HERE, 'gameserver.yaml'), '--http-port', String(http), '--grpc-port', String(grpc), '--health-port', String(health)]);
  p.gameServer = async () => (await fetch(`http://127.0.0.1:${http}/gameserver`)).json();
  p.httpPort = http;
  await until('the SDK server’s HTTP gateway', () => p.gameServer());
  return p;
}

/** gameserver.yaml's container arguments, on loopback and any free UDP port. */
function arcadeArgs({ agones }) {
  const args = [...GAMESERVER.spec.template.spec.containers[0].args];
  args[args.indexOf('--host') + 1] = '127.0.0.1';
  args[args.indexOf('--port') + 1] = '0';
  return agones ? args : args.filter((a) => a !== '--agones');
}

const healthPings = (sdk) => sdk.output.match(/Health Ping Received/g)?.length ?? 0;

test('fleet.yaml stamps out gameserver.yaml’s spec', () => {
  assert.deepEqual(FLEET.spec.template.spec, GAMESERVER.spec);
  assert.deepEqual(FLEET.spec.template.metadata.labels, GAMESERVER.metadata.labels);
  assert.ok(GAMESERVER.spec.template.spec.containers[0].args.includes('--agones'));
});

test('fleet.yaml and gameserver.yaml validate against Agones’ CustomResourceDefinitions (strict)', { skip: NO_CRDS }, () => {
  for (const file of ['fleet.yaml', 'gameserver.yaml']) {
    const { ok, output } = validateCustomResources(CRDS, join(HERE, file));
    assert.ok(ok, output);
    assert.equal(output.match(/passed against its CustomResourceDefinition/g)?.length, file === 'fleet.yaml' ? 2 : 1, output);
  }
});

test('Agones’ SDK server reads gameserver.yaml as a GameServer', { skip: NO_SDK }, async () => {
  const sdk = await startSdkServer();
  const gs = await sdk.gameServer();
  assert.equal(gs.object_meta.name, GAMESERVER.metadata.name);
  assert.deepEqual(gs.object_meta.labels, GAMESERVER.metadata.labels);
  assert.equal(Number(gs.spec.health.period_seconds), GAMESERVER.spec.health.periodSeconds);
  sdk.kill('SIGTERM');
  await sdk.exited;
});

test('without --agones the arcade never calls the sidecar', { skip: NO_SDK, timeout: 30_000 }, async () => {
  const sdk = await startSdkServer();
  const arcade = start(ARCADE, arcadeArgs({ agones: false }), { AGONES_SDK_HTTP_PORT: String(sdk.httpPort) });
  await until('the arcade to listen', async () => arcade.output.includes('"event":"listening"'));
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await sdk.gameServer()).status.state, '');
  assert.equal(healthPings(sdk), 0);
  arcade.kill('SIGTERM');
  assert.deepEqual(await arcade.exited, { code: 0, signal: null });
  sdk.kill('SIGTERM');
  await sdk.exited;
});

test('with --agones the arcade marks itself Ready and keeps sending Health', { skip: NO_SDK, timeout: 30_000 }, async () => {
  const sdk = await startSdkServer();
  assert.equal((await sdk.gameServer()).status.state, '');
  const arcade = start(ARCADE, arcadeArgs({ agones: true }), { AGONES_SDK_HTTP_PORT: String(sdk.httpPort) });
  await until('state Ready', async () => (await sdk.gameServer()).status.state === 'Ready');
  // The sidecar can answer Ready before the arcade's stdout reaches us.
  await until('the Ready event on stdout', async () => arcade.output.includes('"event":"agones","state":"Ready"'));
  assert.match(arcade.output, /"event":"listening".*\n.*"event":"agones","state":"Ready"/s, 'Ready only after the shards listen');
  // Pings every 2 s; Agones wants one per periodSeconds.
  await until('three health pings', async () => healthPings(sdk) >= 3, GAMESERVER.spec.health.periodSeconds * 1000 * 2);
  arcade.kill('SIGTERM');
  assert.deepEqual(await arcade.exited, { code: 0, signal: null }, arcade.output);
  sdk.kill('SIGTERM');
  await sdk.exited;
});

test('with --agones and no sidecar the arcade exits non-zero and says why', { timeout: 15_000 }, async () => {
  const arcade = start(ARCADE, arcadeArgs({ agones: true }), { AGONES_SDK_HTTP_PORT: String(await freePort()) });
  const { code } = await arcade.exited;
  assert.notEqual(code, 0);
  assert.match(arcade.output, /--agones: the Agones SDK sidecar did not take Ready/);
});
