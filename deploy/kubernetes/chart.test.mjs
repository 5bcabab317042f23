// The relay's Helm chart (node --test): lint, render with the real helm, validate every rendered
// resource against the Kubernetes schemas (kubernetes-validate --strict, an old and a new
// version), then check what the cluster would do with it: readiness on /healthz, a preStop that
// drains (the image's own drain command) within the grace period, non-root and read-only, the
// secrets, Services for TCP and UDP, the PDB, and an HPA on the relay's sessions gauge; and the
// relay itself accepts the environment the chart gives it.
// Tools: deploy/tools.mjs (npm run setup installs them). The relay must be built (npm test does).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { KUBERNETES_VERSIONS } from '../tools.mjs';
import { helm, parseYaml, validate } from './manifests.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const CHART = join(HERE, 'ricochet-relay');
const IMAGE = JSON.parse(readFileSync(join(ROOT, 'deploy', 'relay', 'image.json'), 'utf8'));
const VALUES = ['--set', 'relay.allowBackends={10.0.0.5:4000,10.0.0.6:*}'];

function render(kubeVersion, extra = []) {
  const r = helm(['template', 'arena', CHART, '--kube-version', kubeVersion, ...VALUES, ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const byKind = (docs) => Object.fromEntries(docs.map((d) => [`${d.kind}/${d.metadata.name}`, d]));

test('helm lint --strict passes', () => {
  const r = helm(['lint', '--strict', CHART, '--kube-version', KUBERNETES_VERSIONS[0], ...VALUES]);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

test('rendering refuses a relay with no allowed backends', () => {
  const r = helm(['template', 'arena', CHART, '--kube-version', KUBERNETES_VERSIONS[0]]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /relay\.allowBackends/);
});

for (const version of KUBERNETES_VERSIONS) {
  test(`every rendered resource validates against Kubernetes ${version} (strict)`, () => {
    for (const extra of [[], ['--set', 'autoscaling.enabled=false', '--set', 'service.tcp.type=ClusterIP', '--set', 'relay.extraEnv.RICOCHET_RELAY_IDLE_TIMEOUT_MS=20000']]) {
      const { ok, output } = validate(render(version, extra), version);
      assert.ok(ok, output);
      assert.equal(output.match(/passed for resource/g)?.length, extra.length ? 5 : 6, output);
    }
  });
}

test('the rendered resources do what the cluster needs', () => {
  const docs = byKind(parseYaml(render(KUBERNETES_VERSIONS.at(-1))));
  assert.deepEqual(Object.keys(docs).sort(), [
    'Deployment/arena-ricochet-relay',
    'HorizontalPodAutoscaler/arena-ricochet-relay',
    'PodDisruptionBudget/arena-ricochet-relay',
    'Service/arena-ricochet-relay-metrics',
    'Service/arena-ricochet-relay-tcp',
    'Service/arena-ricochet-relay-udp',
  ]);
  const deploy = docs['Deployment/arena-ricochet-relay'];
  const pod = deploy.spec.template.spec;
  const [c] = pod.containers;
  const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));
  const port = (name) => c.ports.find((p) => p.name === name);

  // Taken out of the Services while draining; alive through the drain.
  assert.deepEqual(c.readinessProbe.httpGet, { path: '/healthz', port: 'metrics' });
  assert.ok(!c.livenessProbe.httpGet, 'liveness must not follow /healthz: it is 503 for the whole drain');
  // The preStop is the image's drain command, and the kubelet waits out the whole drain.
  assert.deepEqual(c.lifecycle.preStop.exec.command, IMAGE.drainCommand);
  const drainS = (Number(env.RICOCHET_RELAY_DRAIN_NOTICE_MS) + Number(env.RICOCHET_RELAY_DRAIN_MS)) / 1000;
  assert.ok(pod.terminationGracePeriodSeconds >= drainS + 10, `grace ${pod.terminationGracePeriodSeconds} s vs drain ${drainS} s`);
  // Non-root, as the image's user; nothing written to the image.
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.securityContext.runAsUser, IMAGE.user.uid);
  assert.equal(pod.securityContext.runAsGroup, IMAGE.user.uid);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
  // Ports: the image's, with the right protocols.
  assert.deepEqual(
    [port('http'), port('webtransport'), port('metrics')].map((p) => `${p.containerPort}/${p.protocol.toLowerCase()}`),
    IMAGE.ports,
  );
  // Secrets: the token secret through the environment, the certificate as a mounted directory.
  assert.deepEqual(env.RICOCHET_RELAY_TOKEN_SECRET, { secretKeyRef: { name: 'ricochet-relay-token', key: 'token-secret' } });
  const tls = pod.volumes.find((v) => v.name === 'tls');
  assert.equal(tls.secret.secretName, 'ricochet-relay-tls');
  const mount = c.volumeMounts.find((m) => m.name === 'tls');
  assert.ok(!mount.subPath, 'a subPath mount never sees a renewed certificate');
  assert.equal(env.RICOCHET_RELAY_CERT_FILE, `${mount.mountPath}/tls.crt`);
  assert.equal(env.RICOCHET_RELAY_KEY_FILE, `${mount.mountPath}/tls.key`);

  const tcp = docs['Service/arena-ricochet-relay-tcp'].spec;
  const udp = docs['Service/arena-ricochet-relay-udp'].spec;
  assert.deepEqual(tcp.ports.map((p) => [p.protocol, p.targetPort]), [['TCP', 'http']]);
  assert.deepEqual(udp.ports.map((p) => [p.protocol, p.targetPort]), [['UDP', 'webtransport']]);
  for (const s of [tcp, udp]) assert.deepEqual(s.selector, deploy.spec.selector.matchLabels);

  const pdb = docs['PodDisruptionBudget/arena-ricochet-relay'];
  assert.equal(pdb.apiVersion, 'policy/v1');
  assert.deepEqual(pdb.spec.selector.matchLabels, deploy.spec.selector.matchLabels);
  assert.equal(pdb.spec.maxUnavailable, 1);

  const hpa = docs['HorizontalPodAutoscaler/arena-ricochet-relay'];
  assert.equal(hpa.apiVersion, 'autoscaling/v2');
  assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deploy.metadata.name });
  assert.equal(deploy.spec.replicas, undefined, 'the HPA owns the replica count');
  const [metric] = hpa.spec.metrics;
  assert.equal(metric.type, 'Pods');
  // The gauge the relay exports (relay/src/metrics.ts), not a name that merely looks right.
  const gauge = readFileSync(join(ROOT, 'relay', 'src', 'metrics.ts'), 'utf8').match(/sessions = new Gauge\(\{ name: '([a-z_]+)'/)[1];
  assert.equal(metric.pods.metric.name, gauge);
  assert.equal(metric.pods.target.type, 'AverageValue');
});

test('the relay accepts the environment the chart gives it', async () => {
  const { loadOptions, DEFAULTS } = await import(pathToFileURL(join(ROOT, 'relay', 'dist', 'index.js')).href);
  const [c] = byKind(parseYaml(render(KUBERNETES_VERSIONS.at(-1), ['--set', 'relay.extraEnv.RICOCHET_RELAY_IDLE_TIMEOUT_MS=20000'])))['Deployment/arena-ricochet-relay'].spec.template.spec.containers;
  const env = Object.fromEntries(c.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
  // Every variable names an option (a misspelt one would be ignored silently).
  const known = new Set(
    [...Object.keys(DEFAULTS), 'tokenSecret', 'tokenSecretFile', 'certFile', 'keyFile', 'impairment'].map(
      (k) => `RICOCHET_RELAY_${k.replace(/([wW])ebTransport/, '$1ebtransport').replace(/[A-Z]/g, (x) => `_${x}`).toUpperCase()}`,
    ),
  );
  for (const name of Object.keys(env)) assert.ok(known.has(name), `${name} is no relay option`);
  const o = loadOptions([], { ...env, RICOCHET_RELAY_TOKEN_SECRET: 'k8VzQ3pX9mR2wL7tY4nB6cF1hJ5dG8sA0eU' });
  assert.equal(o.host, '0.0.0.0');
  assert.equal(o.production, true);
  assert.deepEqual(o.allowBackends, ['10.0.0.5:4000', '10.0.0.6:*']);
  assert.equal(o.drainNoticeMs, 5000);
  assert.equal(o.idleTimeoutMs, 20000);
  assert.equal(o.certFile, '/etc/ricochet-relay/tls/tls.crt');
});
