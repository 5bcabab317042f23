// The tools the deploy/ checks need, pinned, installed once from package
// registries and cached under ~/.cache/ricochet/tools (npm test's deploy step
// calls ensureDeployTools; idempotent: a few stats when everything is there).
//
//   helm                 Go module helm.sh/helm/v3 (go install; ~4 min once on 2 cores)
//   kubernetes-validate  PyPI, in its own venv; bundles the Kubernetes JSON schemas (offline)
//   mmdebstrap           Debian, for the relay image's root filesystem (apt-get, as root)
//
// Node builtins only: setup runs it before node_modules exists.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export const HELM_VERSION = '3.22.0';
export const KUBERNETES_VALIDATE_VERSION = '1.37.0';
/** Kubernetes versions the rendered manifests are validated against: an old floor and the newest schemas bundled. */
export const KUBERNETES_VERSIONS = ['1.30.0', '1.37.0'];

const tools = () => join(process.env.RICOCHET_CACHE || join(homedir(), '.cache', 'ricochet'), 'tools');
export const helmPath = () => join(tools(), `helm-${HELM_VERSION}`, 'helm');
export const kubernetesValidateVenv = () => join(tools(), `kubernetes-validate-${KUBERNETES_VALIDATE_VERSION}`);
export const kubernetesValidatePath = () => join(kubernetesValidateVenv(), 'bin', 'kubernetes-validate');
/** The venv's python: it has PyYAML (a kubernetes-validate dependency), which the chart test parses YAML with. */
export const venvPython = () => join(kubernetesValidateVenv(), 'bin', 'python');

const log = (m) => console.log(`[setup] ${m}`);

function run(cmd, args, env = process.env) {
  console.log(`$ ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.signal ?? `exit ${r.status}`})`);
}

export function ensureHelm() {
  if (existsSync(helmPath())) return;
  log(`installing helm ${HELM_VERSION} into ${dirname(helmPath())} (go install, one-time, ~4 min)`);
  run('go', ['install', `helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}`], { ...process.env, GOBIN: dirname(helmPath()) });
  if (!existsSync(helmPath())) throw new Error(`go install finished but ${helmPath()} is missing`);
}

export function ensureKubernetesValidate() {
  if (existsSync(kubernetesValidatePath())) return;
  const venv = kubernetesValidateVenv();
  log(`installing kubernetes-validate ${KUBERNETES_VALIDATE_VERSION} into ${venv} (one-time)`);
  run('python3', ['-m', 'venv', venv]);
  run(join(venv, 'bin', 'pip'), ['install', '--quiet', `kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}`]);
}

export function ensureMmdebstrap() {
  if (spawnSync('mmdebstrap', ['--version']).status === 0) return;
  if (process.getuid?.() !== 0) throw new Error('mmdebstrap is missing: apt-get install -y mmdebstrap');
  log('installing Debian mmdebstrap for the relay image root filesystem (one-time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update'], env);
  run('apt-get', ['install', '-y', 'mmdebstrap'], env);
}

export function ensureDeployTools() {
  // The root filesystem needs root anyway (device nodes, chroot): elsewhere its test says so itself.
  if (process.getuid?.() === 0) ensureMmdebstrap();
  ensureKubernetesValidate();
  ensureHelm();
}
