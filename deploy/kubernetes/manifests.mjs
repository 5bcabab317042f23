// Rendering and checking Kubernetes manifests with the pinned tools of
// deploy/tools.mjs: helm renders the chart, kubernetes-validate checks each
// resource against the Kubernetes JSON schemas it bundles (offline, strict:
// unknown fields fail), the venv's PyYAML turns YAML into objects.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { helmPath, kubernetesValidatePath, venvPython } from '../tools.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));

function run(cmd, args, input) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${cmd}: ${r.error.message} (npm run setup installs it)`);
  return r;
}

/** `helm <args>`: { status, stdout, stderr }. */
export const helm = (args) => run(helmPath(), args);

/** Every YAML document in text, as objects (empty documents dropped). */
export function parseYaml(text) {
  const r = run(venvPython(), ['-c', 'import sys, json, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))'], text);
  if (r.status !== 0) throw new Error(`YAML did not parse: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * kubernetes-validate --strict of YAML text against one Kubernetes version.
 * Returns { ok, output }: one line per resource, why a failing one failed.
 */
export function validate(yamlText, kubernetesVersion) {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-k8s-'));
  try {
    const file = join(dir, 'manifests.yaml');
    writeFileSync(file, yamlText);
    const r = run(kubernetesValidatePath(), ['--strict', '-k', kubernetesVersion, file]);
    return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Custom resources in manifestFile against the CustomResourceDefinitions in crdFile
 * (validate-crd.py: their openAPIV3Schema, unknown fields refused). Returns { ok, output }.
 */
export function validateCustomResources(crdFile, manifestFile) {
  const r = run(venvPython(), [join(HERE, 'validate-crd.py'), crdFile, manifestFile]);
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
}
