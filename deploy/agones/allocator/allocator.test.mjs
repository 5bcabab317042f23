// The allocator's cluster-free parts (node --test). The allocation call itself needs a cluster
// with Agones and is not run here (deploy/README.md); what it sends and what it makes of
// Agones' answer are checked, and the token it mints is checked with the relay's own code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { backendAllowed, verifyToken } from '@ricochet/relay';
import { KUBERNETES_VERSIONS } from '../../tools.mjs';
import { parseYaml, validate } from '../../kubernetes/manifests.mjs';
import { AllocationError, allocatedBackend, allocationRequest, connectOffer } from './allocator.mjs';
import { createAllocatorServer } from './server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const [FLEET] = parseYaml(readFileSync(join(HERE, '..', 'fleet.yaml'), 'utf8'));
const SECRET = 'q3Vt8Zr1Lw6Nc0Hy5Pk2Bs9Dx4Gf7Jm';
const PORT_NAME = FLEET.spec.template.spec.ports[0].name;

/** An answer shaped as Agones' GameServerAllocation status (allocation.agones.dev/v1). */
const allocated = (address, port) => ({
  apiVersion: 'allocation.agones.dev/v1',
  kind: 'GameServerAllocation',
  status: { state: 'Allocated', gameServerName: 'arcade-x7k2p-9qz4m', address, nodeName: 'node-a', ports: [{ name: PORT_NAME, port }] },
});

test('asks Agones for a Ready game server of fleet.yaml’s fleet', () => {
  const req = allocationRequest(FLEET.metadata.name);
  assert.equal(req.apiVersion, 'allocation.agones.dev/v1');
  assert.equal(req.kind, 'GameServerAllocation');
  assert.deepEqual(req.spec.selectors, [{ matchLabels: { 'agones.dev/fleet': 'arcade' } }]);
  assert.equal(req.spec.scheduling, FLEET.spec.scheduling);
});

test('the token names the allocated server’s address and mapped port, and the relay accepts it', () => {
  const offer = connectOffer(allocated('10.20.0.7', 7342), { secret: SECRET, sub: 'alice', ttlSeconds: 60, relay: { webSocketUrl: 'wss://relay.example.com/ricochet' } });
  assert.equal(offer.backend, '10.20.0.7:7342');
  assert.equal(offer.gameServer, 'arcade-x7k2p-9qz4m');
  const claims = verifyToken(SECRET, offer.token);
  assert.equal(claims.backend, '10.20.0.7:7342');
  assert.equal(claims.sub, 'alice');
  assert.ok(claims.exp - claims.iat <= 60);
  // A relay that allows the game-server nodes forwards it there; one that does not, refuses it.
  assert.equal(backendAllowed(['10.20.0.7:*'], claims.backend), true);
  assert.equal(backendAllowed(['10.20.0.8:*'], claims.backend), false);
  assert.throws(() => verifyToken('another-secret-another-secret-xx', offer.token));
});

test('IPv6 node addresses are bracketed as the relay expects', () => {
  assert.equal(allocatedBackend(allocated('fd00::7', 7001)).backend, '[fd00::7]:7001');
});

test('no Ready server, contention and malformed answers are errors, contention retryable', () => {
  const err = (status) => {
    try {
      allocatedBackend({ status });
    } catch (e) {
      assert.ok(e instanceof AllocationError);
      return e;
    }
    assert.fail('no error');
  };
  assert.equal(err({ state: 'UnAllocated' }).retry, false);
  assert.equal(err({ state: 'Contention' }).retry, true);
  assert.equal(err({ state: 'Allocated', address: '10.0.0.1', ports: [{ name: 'other', port: 1 }] }).retry, false);
  assert.equal(err({}).retry, false);
});

test('the service refuses a caller without the API key, and a malformed body, before allocating', async () => {
  const allocator = { allocate: () => assert.fail('allocated for a refused request') };
  const server = createAllocatorServer({ allocator, secret: SECRET, apiKey: 'k'.repeat(24), relay: {} });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  try {
    const post = (headers, body) => fetch(`${url}/allocate`, { method: 'POST', headers, body });
    assert.equal((await post({}, '{"player":"alice"}')).status, 401);
    assert.equal((await post({ authorization: `Bearer ${'x'.repeat(24)}` }, '{"player":"alice"}')).status, 401);
    assert.equal((await post({ authorization: `Bearer ${'k'.repeat(24)}` }, '{"player":"a b"}')).status, 400);
    assert.equal((await post({ authorization: `Bearer ${'k'.repeat(24)}` }, 'not json')).status, 400);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
  } finally {
    server.close();
  }
});

for (const version of KUBERNETES_VERSIONS)
  test(`allocator.yaml validates against Kubernetes ${version} (strict) and grants only allocation`, () => {
    const text = readFileSync(join(HERE, '..', 'allocator.yaml'), 'utf8');
    const { ok, output } = validate(text, version);
    assert.ok(ok, output);
    assert.equal(output.match(/passed for resource/g)?.length, 5, output);
    const role = parseYaml(text).find((d) => d.kind === 'Role');
    assert.deepEqual(role.rules, [{ apiGroups: ['allocation.agones.dev'], resources: ['gameserverallocations'], verbs: ['create'] }]);
  });
