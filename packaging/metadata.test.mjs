// What every published package promises before anyone installs it: one
// version everywhere, the files and fields npm shows, and an entry for both
// module systems on every subpath. Run alone: node --test packaging/metadata.test.mjs
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../scripts/setup.mjs';
import { packageFiles, rootVersion, syncVersion } from '../scripts/version.mjs';

const read = (file) => JSON.parse(readFileSync(join(ROOT, file), 'utf8'));
const published = packageFiles().map((file) => ({ file, dir: dirname(file), pkg: read(file) }));
const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');

test('the root version is the version of every package and crate', () => {
  assert.deepEqual(syncVersion(rootVersion(), { write: false }), []);
});

test('the relay depends on the SDK of its own release by a caret range', () => {
  const relay = read('relay/package.json');
  assert.equal(relay.dependencies['@ricochet/sdk'], `^${rootVersion()}`);
});

for (const { file, dir, pkg } of published) {
  test(`${pkg.name} carries a README, the project's LICENSE and the fields npm shows`, () => {
    assert.ok(existsSync(join(ROOT, dir, 'README.md')), `${dir}/README.md`);
    assert.equal(readFileSync(join(ROOT, dir, 'LICENSE'), 'utf8'), license, `${dir}/LICENSE differs from LICENSE`);
    assert.equal(pkg.license, 'MIT');
    assert.equal(pkg.publishConfig?.access, 'public', `${file}: a scoped package is private unless published public`);
    assert.equal(pkg.repository?.directory, dir.replaceAll('\\', '/'));
    assert.match(pkg.repository?.url ?? '', /^git\+https:\/\//);
    assert.ok(pkg.description, `${file}: description`);
  });
}

for (const dir of ['sdk', 'relay', 'game']) {
  const pkg = read(join(dir, 'package.json'));

  test(`${pkg.name} builds itself when packed, and says which Node it needs`, () => {
    assert.ok(pkg.scripts?.prepack, `${dir}: a clean clone must pack a built package`);
    assert.match(pkg.engines?.node ?? '', /^>=20(\.\d+)*$/);
    assert.ok(pkg.keywords?.length, `${dir}: keywords`);
    assert.ok(pkg.homepage, `${dir}: homepage`);
  });

  test(`${pkg.name} resolves every subpath for import and for require`, () => {
    const resolves = (target, condition) => {
      if (typeof target === 'string') return true;
      if (target === null || typeof target !== 'object') return false;
      return Object.entries(target).some(([k, v]) => (k === condition || k === 'default' || k === 'node') && resolves(v, condition));
    };
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      assert.ok(resolves(target, 'import'), `${pkg.name} ${subpath}: no entry for import`);
      assert.ok(resolves(target, 'require'), `${pkg.name} ${subpath}: no entry for require`);
    }
  });
}
