import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OPTION_HELP } from '../src/options-help.js';
import { DEFAULTS, backendAllowed, envName, loadOptions } from '../src/options.js';

const GOOD_SECRET = randomBytes(32).toString('base64url');

const scratch: string[] = [];
/** A temporary directory, removed after the file's tests. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'relay-'));
  scratch.push(dir);
  return dir;
}
afterAll(() => scratch.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('relay options', () => {
  it('flags override env, env overrides the config file, the file overrides defaults', () => {
    const dir = tempDir();
    const file = join(dir, 'relay.json');
    writeFileSync(file, JSON.stringify({ httpPort: 1111, maxSessions: 5, tokenSecret: 'from-file-0123456789abcdefghijklmnop' }));
    const o = loadOptions(['--config', file, '--http-port', '3333'], { RICOCHET_RELAY_HTTP_PORT: '2222', RICOCHET_RELAY_ALLOW_BACKENDS: '127.0.0.1:4000, 127.0.0.1:*' });
    expect(o.httpPort).toBe(3333);
    expect(o.maxSessions).toBe(5);
    expect(o.tokenSecret).toBe('from-file-0123456789abcdefghijklmnop');
    expect(o.allowBackends).toEqual(['127.0.0.1:4000', '127.0.0.1:*']);
    expect(o.handshakeTimeoutMs).toBe(5000);
  });

  it('names the bad option', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    expect(() => loadOptions([], {})).toThrowError(/tokenSecret/);
    expect(() => loadOptions(['--max-sessions', '0'], env)).toThrowError(/maxSessions/);
    expect(() => loadOptions(['--allow-backends', 'nope'], env)).toThrowError(/allowBackends/);
    expect(() => loadOptions(['--no-such-flag'], env)).toThrowError();
  });

  it('takes the token secret from the environment or a file, never a flag, and only 32 random bytes or more', () => {
    expect(() => loadOptions(['--token-secret', GOOD_SECRET], {})).toThrowError(/--token-secret is refused/);
    expect(() => loadOptions([`--token-secret=${GOOD_SECRET}`], {})).toThrowError(/--token-secret is refused/);
    expect(() => loadOptions([], { RICOCHET_RELAY_TOKEN_SECRET: 'sixteen-bytes-xx' })).toThrowError(/at least 32 bytes/);
    expect(() => loadOptions([], { RICOCHET_RELAY_TOKEN_SECRET: 'ab'.repeat(20) })).toThrowError(/no random secret/);
    expect(loadOptions([], { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET }).tokenSecret).toBe(GOOD_SECRET);
    const file = join(tempDir(), 'secret');
    writeFileSync(file, `${GOOD_SECRET}\n`);
    expect(loadOptions(['--token-secret-file', file], {}).tokenSecret).toBe(GOOD_SECRET);
  });

  it('refuses a certificate without its key, and allowlist ports outside 1..65535', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    expect(() => loadOptions(['--cert-file', '/tmp/cert.pem'], env)).toThrowError(/certFile and keyFile must be given together/);
    expect(() => loadOptions(['--production', '--key-file', '/tmp/key.pem'], env)).toThrowError(/certFile and keyFile/);
    for (const bad of ['127.0.0.1:0', '127.0.0.1:99999', '127.0.0.1:abc', ':4000', 'a b:1'])
      expect(() => loadOptions(['--allow-backends', bad], env)).toThrowError(/allowBackends/);
  });

  it('allowlist matches exact ports and host wildcards only, and never an invalid port', () => {
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.1:0')).toBe(false);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.1:99999')).toBe(false);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.1:abc')).toBe(false);
    expect(backendAllowed(['[::1]:*'], '[::1]:4000')).toBe(true);
    expect(backendAllowed(['127.0.0.1:4000'], '127.0.0.1:4000')).toBe(true);
    expect(backendAllowed(['127.0.0.1:4000'], '127.0.0.1:4001')).toBe(false);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.1:9')).toBe(true);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.2:9')).toBe(false);
  });

  it('allows port ranges and subnets, for game servers on a cluster\'s changing node addresses', () => {
    const allow = ['10.8.0.0/16:7000-7999', '[fd00::/64]:*', 'game.example:4000-4001'];
    expect(backendAllowed(allow, '10.8.200.9:7000')).toBe(true);
    expect(backendAllowed(allow, '10.8.200.9:7999')).toBe(true);
    expect(backendAllowed(allow, '10.8.200.9:8000')).toBe(false);
    expect(backendAllowed(allow, '10.9.0.1:7000')).toBe(false);
    expect(backendAllowed(allow, '[fd00::5]:4000')).toBe(true);
    expect(backendAllowed(allow, '[fd01::5]:4000')).toBe(false);
    expect(backendAllowed(allow, 'game.example:4001')).toBe(true);
    // A subnet matches addresses, never names (nothing is resolved).
    expect(backendAllowed(['10.0.0.0/8:*'], 'ten.example:4000')).toBe(false);
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    for (const bad of ['10.0.0.0/33:*', '10.0.0.0/8:9-1', 'fd00::/64:*', '10.0.0.0/x:*', 'host:0-5', 'a/8:*']) {
      expect(() => loadOptions(['--allow-backends', bad], env), bad).toThrowError(/allowBackends/);
    }
  });

  it('serves WebTransport by default; --no-webtransport, RICOCHET_RELAY_WEBTRANSPORT=false or the config file turn it off', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    expect(loadOptions([], env).webTransport).toBe(true);
    expect(loadOptions(['--no-webtransport'], env).webTransport).toBe(false);
    expect(loadOptions([], { ...env, RICOCHET_RELAY_WEBTRANSPORT: 'false' }).webTransport).toBe(false);
    expect(loadOptions(['--webtransport'], { ...env, RICOCHET_RELAY_WEBTRANSPORT: 'false' }).webTransport).toBe(true);
    const file = join(tempDir(), 'relay.json');
    writeFileSync(file, JSON.stringify({ webTransport: false }));
    expect(loadOptions(['--config', file], env).webTransport).toBe(false);
    writeFileSync(file, JSON.stringify({ webTransport: 'no' }));
    expect(() => loadOptions(['--config', file], env)).toThrowError(/webTransport must be true or false/);
  });

  it('negates any boolean flag with --no-, and refuses --no- on a flag that takes a value', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET, RICOCHET_RELAY_PRODUCTION: 'true' };
    expect(loadOptions(['--no-production'], env).production).toBe(false);
    expect(() => loadOptions(['--no-wt-port'], env)).toThrowError(/--no-wt-port/);
  });

  it('takes a negative number after a flag: --wt-port -1 and --metrics-port -1', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    expect(loadOptions(['--wt-port', '-1', '--metrics-port', '-1', '--http-port', '0'], env)).toMatchObject({ wtPort: -1, metricsPort: -1, httpPort: 0 });
    expect(() => loadOptions(['--wt-port', '-2'], env)).toThrowError(/wtPort must be an integer in -1\.\.65535, got -2/);
  });
});

describe('wtDataPath', () => {
  it('is native or js, from --wt-data-path, RICOCHET_RELAY_WT_DATA_PATH or the file; anything else is refused', () => {
    const env = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    expect(loadOptions(['--wt-data-path', 'js'], env).wtDataPath).toBe('js');
    expect(loadOptions([], { ...env, RICOCHET_RELAY_WT_DATA_PATH: 'native' }).wtDataPath).toBe('native');
    expect(loadOptions(['--wt-data-path', 'js'], { ...env, RICOCHET_RELAY_WT_DATA_PATH: 'native' }).wtDataPath).toBe('js');
    expect(() => loadOptions(['--wt-data-path', 'rust'], env)).toThrowError(/wtDataPath must be native or js/);
  });
});

describe('RICOCHET_RELAY_* variables', () => {
  it('every option listed by --help reads its variable (a value other than its default)', () => {
    const dir = tempDir();
    const secretFile = join(dir, 'secret');
    writeFileSync(secretFile, GOOD_SECRET);
    // Options whose default is absent or which constrain each other get a value chosen here.
    const chosen: Record<string, [raw: string, parsed: unknown]> = {
      allowBackends: ['127.0.0.1:4000,10.0.0.0/8:*', ['127.0.0.1:4000', '10.0.0.0/8:*']],
      trustedProxies: ['10.0.0.5, 10.0.1.0/24', ['10.0.0.5', '10.0.1.0/24']],
      tokenSecretFile: [secretFile, secretFile],
      certFile: ['/nonexistent/cert.pem', '/nonexistent/cert.pem'],
      keyFile: ['/nonexistent/key.pem', '/nonexistent/key.pem'],
      impairment: ['wifi', 'wifi'],
      wtDataPath: [DEFAULTS.wtDataPath === 'js' ? 'native' : 'js', DEFAULTS.wtDataPath === 'js' ? 'native' : 'js'],
      production: ['true', true], // impairment and testControl are refused with it: checked alone below
    };
    const keys = Object.keys(OPTION_HELP) as (keyof typeof OPTION_HELP)[];
    const alone = new Set(['production', 'testControl']);
    const env: Record<string, string> = { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET };
    const expected: Record<string, unknown> = {};
    for (const k of keys) {
      if (alone.has(k)) continue;
      const d = (DEFAULTS as Record<string, unknown>)[k];
      const [raw, parsed] = chosen[k] ?? (typeof d === 'number' ? [String(d + 1), d + 1] : typeof d === 'boolean' ? [String(!d), !d] : [`${String(d)}x`, `${String(d)}x`]);
      env[envName(k)] = raw;
      expected[k] = parsed;
    }
    expect(loadOptions([], env)).toMatchObject(expected);
    for (const k of alone) expect(loadOptions([], { RICOCHET_RELAY_TOKEN_SECRET: GOOD_SECRET, [envName(k)]: 'true' })[k as 'production']).toBe(true);
    // The secret itself: only a variable or a file, never a flag.
    expect(envName('tokenSecret')).toBe('RICOCHET_RELAY_TOKEN_SECRET');
    expect(loadOptions([], { [envName('tokenSecretFile')]: secretFile }).tokenSecret).toBe(GOOD_SECRET);
  });
});
