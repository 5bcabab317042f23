// The relay image without a container engine (node --test):
//   - the Dockerfile says what image.json says (the root filesystem follows image.json);
//   - the relay runs from the image's root filesystem as its non-root user, tini as PID 1,
//     with the prebuilt WebTransport addon loaded; /healthz 200; a WebSocket client with a
//     token minted by the installed CLI becomes a session the sessions metric counts;
//   - the stop signal (SIGTERM to PID 1) drains: /healthz 503, the client is told to move
//     (4002), exit 0; the preStop command (image.json drainCommand) does the same.
// Needs root, mmdebstrap and the built relay (npm test builds it); the Debian part is cached.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HERE, IMAGE, ROOT, buildRootfs } from './build-rootfs.mjs';
import { execInContainer, startContainer } from './run-rootfs.mjs';

const WebSocket = createRequire(join(ROOT, 'relay', 'package.json'))('ws');
const CLI = IMAGE.entrypoint.at(-1);
const DRAIN_NOTICE_MS = 400;

let work;
let rootfs;
let backend;
const secret = randomBytes(32).toString('base64url');

before(
  async () => {
    work = mkdtempSync(join(tmpdir(), 'ricochet-rootfs-'));
    const t0 = performance.now();
    rootfs = await buildRootfs(join(work, 'rootfs'));
    console.log(`root filesystem built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    backend = createSocket('udp4');
    await new Promise((r) => backend.bind(0, '127.0.0.1', r));
  },
  { timeout: 600_000 },
);

after(() => {
  backend?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the Dockerfile describes the contents image.json lists', () => {
  const docker = readFileSync(join(HERE, 'Dockerfile'), 'utf8');
  const froms = [...docker.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(froms, [`debian:${IMAGE.debian}-slim`, `debian:${IMAGE.debian}-slim`], 'both stages on image.json’s Debian suite, slim (= minbase)');
  const installs = [...docker.matchAll(/apt-get install -y --no-install-recommends ([^\\\n]+)/g)].map((m) => m[1].trim().split(/\s+/));
  assert.deepEqual(installs, [IMAGE.buildPackages, IMAGE.runtimePackages]);
  assert.ok(docker.includes(` && ${IMAGE.addUser}\n`), 'the same user, created the same way');
  assert.ok(docker.includes(`WORKDIR ${IMAGE.prefix}\n`) && docker.includes(`COPY --from=build ${IMAGE.prefix} ${IMAGE.prefix}\n`));
  assert.ok(docker.includes(`RUN ${IMAGE.npmInstall.join(' ')} /tmp/tarballs/*.tgz\n`), 'the same npm command');
  assert.match(docker, new RegExp(`^USER ${IMAGE.user.uid}:${IMAGE.user.uid}$`, 'm'));
  const env = Object.fromEntries([...docker.matchAll(/^\s*(?:ENV )?(RICOCHET_\w+|NODE_ENV)=(\S+)/gm)].map((m) => [m[1], m[2]]));
  assert.deepEqual(env, IMAGE.env);
  assert.deepEqual(docker.match(/^EXPOSE (.+)$/m)[1].split(' '), IMAGE.ports);
  assert.match(docker, /^STOPSIGNAL SIGTERM$/m);
  assert.deepEqual(JSON.parse(docker.match(/^ENTRYPOINT (\[.*\])$/m)[1]), IMAGE.entrypoint);
  assert.deepEqual(JSON.parse(docker.match(/^HEALTHCHECK .* CMD (\[.*\])$/m)[1]), IMAGE.healthcheck);
});

/** The relay from the root filesystem on loopback ports, draining quickly; resolves once it listens. */
async function startRelay() {
  const env = {
    RICOCHET_RELAY_TOKEN_SECRET: secret,
    RICOCHET_RELAY_HOST: '127.0.0.1',
    RICOCHET_RELAY_HTTP_PORT: '0',
    RICOCHET_RELAY_WT_PORT: '0',
    RICOCHET_RELAY_METRICS_HOST: '127.0.0.1',
    RICOCHET_RELAY_METRICS_PORT: '0',
    RICOCHET_RELAY_ALLOW_BACKENDS: `127.0.0.1:${backend.address().port}`,
    RICOCHET_RELAY_DRAIN_NOTICE_MS: String(DRAIN_NOTICE_MS),
    RICOCHET_RELAY_DRAIN_MS: '5000',
  };
  const c = startContainer(rootfs, { env });
  let out = '';
  c.proc.stderr.on('data', (d) => (out += d));
  c.exited = new Promise((r) => c.proc.on('exit', (code, signal) => r({ code, signal })));
  c.listening = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`relay did not listen in 15 s:\n${buf}${out}`)), 15_000);
    c.proc.stdout.on('data', (d) => {
      buf += d;
      const line = buf.split('\n').find((l) => l.includes('"event":"listening"'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line));
      }
    });
    c.proc.on('exit', (code) => reject(new Error(`relay exited (${code}) before listening:\n${buf}${out}`)));
  });
  c.health = async () => (await fetch(`http://127.0.0.1:${c.listening.metricsPort}/healthz`)).status;
  c.metrics = async () => (await fetch(`http://127.0.0.1:${c.listening.metricsPort}/metrics`)).text();
  return c;
}

/** A token minted by the CLI installed in the root filesystem, run there as the image's user. */
function mintInImage(sub) {
  const r = spawnSync(
    'chroot',
    [`--userspec=${IMAGE.user.uid}:${IMAGE.user.uid}`, rootfs, '/usr/bin/env', '-i', `RICOCHET_RELAY_TOKEN_SECRET=${secret}`, '/usr/bin/node', CLI, 'mint-token', '--backend', `127.0.0.1:${backend.address().port}`, '--sub', sub],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** uid and command of each process in the container's PID namespace, from the host. */
function processes(pid1) {
  const children = spawnSync('ps', ['-o', 'pid=,uid=,args=', '--ppid', String(pid1)], { encoding: 'utf8' }).stdout.trim();
  const self = spawnSync('ps', ['-o', 'pid=,uid=,args=', '-p', String(pid1)], { encoding: 'utf8' }).stdout.trim();
  return [self, children].join('\n');
}

/**
 * A WebSocket client holding a session, with a token minted inside the image; resolves once
 * the sessions metric counts it. `closed` resolves with the close code.
 */
async function openSession(relay) {
  const ws = new WebSocket(`ws://127.0.0.1:${relay.listening.httpPort}/ricochet?token=${mintInImage('rootfs')}`);
  const closed = new Promise((r) => ws.on('close', (code) => r(code)));
  await new Promise((resolve, reject) => {
    ws.on('open', resolve);
    ws.on('error', reject);
  });
  await until('the sessions metric to count the client', async () => /^ricochet_relay_sessions\{transport="websocket"\} 1$/m.test(await relay.metrics()));
  return { ws, closed };
}

async function until(what, fn, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('runs as the non-root user under tini with the addon; SIGTERM to PID 1 drains: 503, clients moved (4002), exit 0', { timeout: 60_000 }, async () => {
  const relay = await startRelay();
  try {
    assert.equal(relay.listening.webTransportOff, null, 'the prebuilt linux addon loads inside the image');
    assert.ok(relay.listening.wtPort > 0);
    const pid1 = relay.pid1();
    const ps = processes(pid1);
    assert.match(ps.split('\n')[0], new RegExp(`^\\s*${pid1}\\s+${IMAGE.user.uid}\\s+/usr/bin/tini -- /usr/bin/node`), ps);
    assert.match(ps.split('\n')[1], new RegExp(`^\\s*\\d+\\s+${IMAGE.user.uid}\\s+/usr/bin/node ${CLI}`), ps);
    assert.equal(await relay.health(), 200);

    const { closed } = await openSession(relay);

    process.kill(pid1, 'SIGTERM');
    await until('/healthz 503', async () => (await relay.health()) === 503);
    assert.equal(await closed, 4002, 'the client is told to resume through another relay');
    assert.deepEqual(await relay.exited, { code: 0, signal: null });
  } finally {
    relay.proc.kill('SIGKILL');
  }
});

test('the preStop command (image.json drainCommand), run inside the container, drains it to exit 0', { timeout: 60_000 }, async () => {
  const relay = await startRelay();
  try {
    assert.equal(await relay.health(), 200);
    // A session keeps the relay draining for drainNoticeMs (with none it may exit before a probe sees 503).
    const { closed } = await openSession(relay);
    const hook = execInContainer(relay.pid1(), IMAGE.drainCommand);
    await until('/healthz 503', async () => (await relay.health()) === 503);
    assert.equal(await closed, 4002);
    assert.deepEqual(await relay.exited, { code: 0, signal: null });
    // The hook lasts as long as the relay does (kubelet holds SIGTERM back until it returns); PID 1's exit ends it.
    await hook;
  } finally {
    relay.proc.kill('SIGKILL');
  }
});
