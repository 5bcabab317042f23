// Which WebTransport addon relay/native/index.js loads: an explicit path, then
// the development build, then the platform package; and what it says when
// none loads. The choice is tested as a pure function; one test resolves a
// real platform package from node_modules in a child process.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { addonCandidates, addonSource, available, hostFacts, loadFirst, platformPackage } from '../native/index.js';

const LINUX_GNU = { platform: 'linux', arch: 'x64', glibc: '2.36' };
const DEV = '/clone/relay/native/ricochet_relay_wt.node';
const PKG = '@ricochet/relay-linux-x64-gnu';

/** A loader that succeeds only for the ids given. */
const loadOnly = (...ok: string[]) => (id: string) => {
  if (ok.includes(id)) return { id };
  throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
};

describe('addon loader', () => {
  it('names the platform package for glibc and musl Linux, macOS and Windows', () => {
    expect(platformPackage(LINUX_GNU)).toBe('@ricochet/relay-linux-x64-gnu');
    expect(platformPackage({ platform: 'linux', arch: 'arm64', glibc: null })).toBe('@ricochet/relay-linux-arm64-musl');
    expect(platformPackage({ platform: 'darwin', arch: 'arm64', glibc: null })).toBe('@ricochet/relay-darwin-arm64');
    expect(platformPackage({ platform: 'win32', arch: 'x64', glibc: null })).toBe('@ricochet/relay-win32-x64-msvc');
  });

  it('tries RICOCHET_RELAY_ADDON, then the development build, then the platform package', () => {
    const c = addonCandidates({ env: { RICOCHET_RELAY_ADDON: '/opt/wt.node' }, facts: LINUX_GNU, devPath: DEV, exists: () => true });
    expect(c.map((x) => [x.from, x.id])).toEqual([
      ['RICOCHET_RELAY_ADDON', '/opt/wt.node'],
      ['development build', DEV],
      ['platform package', PKG],
    ]);
    expect(loadFirst(c, loadOnly('/opt/wt.node', DEV, PKG))).toMatchObject({ from: 'RICOCHET_RELAY_ADDON', native: { id: '/opt/wt.node' } });
  });

  it('prefers the development build over the platform package', () => {
    const c = addonCandidates({ env: {}, facts: LINUX_GNU, devPath: DEV, exists: () => true });
    expect(loadFirst(c, loadOnly(DEV, PKG))).toMatchObject({ from: 'development build', id: DEV });
  });

  it('uses the platform package when there is no development build', () => {
    const c = addonCandidates({ env: {}, facts: LINUX_GNU, devPath: DEV, exists: () => false });
    expect(c.map((x) => x.from)).toEqual(['platform package']);
    expect(loadFirst(c, loadOnly(PKG))).toMatchObject({ from: 'platform package', id: PKG });
  });

  it('moves past a development build that fails to load', () => {
    const c = addonCandidates({ env: {}, facts: LINUX_GNU, devPath: DEV, exists: () => true });
    expect(loadFirst(c, loadOnly(PKG))).toMatchObject({ from: 'platform package' });
  });

  it('stops at an explicit path that fails, naming it', () => {
    const c = addonCandidates({ env: { RICOCHET_RELAY_ADDON: '/opt/missing.node' }, facts: LINUX_GNU, devPath: DEV, exists: () => true });
    const r = loadFirst(c, loadOnly(DEV, PKG));
    expect(r.native).toBeNull();
    expect(r.error?.code).toBe('RICOCHET_RELAY_ADDON_MISSING');
    expect(r.error?.message).toMatch(/RICOCHET_RELAY_ADDON \/opt\/missing\.node: not found/);
    expect(r.error?.message).not.toMatch(/development build/);
  });

  it('when nothing loads, says what was tried and why', () => {
    const c = addonCandidates({ env: {}, facts: LINUX_GNU, devPath: DEV, exists: () => true });
    const r = loadFirst(c, (id) => {
      if (id === DEV) throw new Error('wrong ELF class: ELFCLASS32\nstack…');
      return loadOnly()(id);
    });
    expect(r.native).toBeNull();
    expect(r.error?.message).toBe(
      `no WebTransport addon could be loaded (tried development build ${DEV}: wrong ELF class: ELFCLASS32; platform package ${PKG}: not found)`,
    );
  });

  it('loads the host platform package by name from node_modules when there is no development build', () => {
    expect(available).toBe(true); // the development build: `npm test` builds it first
    const root = mkdtempSync(join(tmpdir(), 'relay-addon-'));
    onTestFinished(() => rmSync(root, { recursive: true, force: true })); // holds a copy of the addon (~4 MB)
    const relayNative = join(root, 'node_modules', '@ricochet', 'relay', 'native');
    mkdirSync(relayNative, { recursive: true });
    writeFileSync(join(root, 'node_modules', '@ricochet', 'relay', 'package.json'), JSON.stringify({ name: '@ricochet/relay', type: 'module' }));
    copyFileSync(fileURLToPath(new URL('../native/index.js', import.meta.url)), join(relayNative, 'index.js'));
    const name = platformPackage(hostFacts());
    const pkgDir = join(root, 'node_modules', ...name.split('/'));
    mkdirSync(pkgDir, { recursive: true });
    writeFileSync(join(pkgDir, 'package.json'), JSON.stringify({ name, version: '0.1.0', main: 'addon.node' }));
    copyFileSync(addonSource!.id, join(pkgDir, 'addon.node'));
    const env = { ...process.env };
    delete env.RICOCHET_RELAY_ADDON;
    const r = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('@ricochet/relay/native/index.js'); console.log(JSON.stringify(m.addonSource), typeof m.WtServer)"],
      { cwd: root, env, encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(`${JSON.stringify({ from: 'platform package', id: name })} function`);
  });
});
