import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backendAllowed, loadOptions } from '../src/options.js';

describe('relay options', () => {
  it('flags override env, env overrides the config file, the file overrides defaults', () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-'));
    const file = join(dir, 'relay.json');
    writeFileSync(file, JSON.stringify({ httpPort: 1111, maxSessions: 5, tokenSecret: 'from-file-0123456789' }));
    const o = loadOptions(['--config', file, '--http-port', '3333'], { RICOCHET_RELAY_HTTP_PORT: '2222', RICOCHET_RELAY_ALLOW_BACKENDS: '127.0.0.1:4000, 127.0.0.1:*' });
    expect(o.httpPort).toBe(3333);
    expect(o.maxSessions).toBe(5);
    expect(o.tokenSecret).toBe('from-file-0123456789');
    expect(o.allowBackends).toEqual(['127.0.0.1:4000', '127.0.0.1:*']);
    expect(o.handshakeTimeoutMs).toBe(5000);
  });

  it('names the bad option', () => {
    expect(() => loadOptions([], {})).toThrowError(/tokenSecret/);
    expect(() => loadOptions(['--token-secret', 'x'.repeat(20), '--max-sessions', '0'], {})).toThrowError(/maxSessions/);
    expect(() => loadOptions(['--token-secret', 'x'.repeat(20), '--allow-backends', 'nope'], {})).toThrowError(/allowBackends/);
    expect(() => loadOptions(['--no-such-flag'], {})).toThrowError();
  });

  it('allowlist matches exact ports and host wildcards only', () => {
    expect(backendAllowed(['127.0.0.1:4000'], '127.0.0.1:4000')).toBe(true);
    expect(backendAllowed(['127.0.0.1:4000'], '127.0.0.1:4001')).toBe(false);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.1:9')).toBe(true);
    expect(backendAllowed(['127.0.0.1:*'], '127.0.0.2:9')).toBe(false);
  });
});
