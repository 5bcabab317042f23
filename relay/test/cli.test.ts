// The built CLI: mint-token prints a token the relay accepts; the relay
// process starts from flags, serves /healthz, and drains on SIGTERM.
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { verifyToken } from '../src/token.js';
import { DEFAULTS } from '../src/options.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const SECRET = randomBytes(32).toString('base64url');

describe('ricochet-relay CLI', () => {
  it('mint-token prints a token that verifies', () => {
    const r = spawnSync(process.execPath, [CLI, 'mint-token', '--backend', '127.0.0.1:4000', '--sub', 'bob', '--ttl', '30'], {
      encoding: 'utf8',
      env: { ...process.env, RICOCHET_RELAY_TOKEN_SECRET: SECRET },
    });
    expect(r.status).toBe(0);
    expect(verifyToken(SECRET, r.stdout.trim())).toMatchObject({ sub: 'bob', backend: '127.0.0.1:4000' });
  });

  it('--help lists every option with its flag, environment variable and default', () => {
    const r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const keys = [...Object.keys(DEFAULTS), 'tokenSecretFile', 'certFile', 'keyFile', 'impairment'];
    for (const k of keys) {
      const flag = `--${k.replace(/([wW])ebTransport/, '$1ebtransport').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      const line = r.stdout.split('Options (')[1]!.split('\n').find((l) => l.trimStart().startsWith(`${flag} `));
      expect(line, flag).toBeDefined();
      expect(line).toMatch(/RICOCHET_RELAY_[A-Z_]+/);
    }
    expect(r.stdout).toMatch(/--drain-notice-ms N\s+RICOCHET_RELAY_DRAIN_NOTICE_MS\s+default 0\s+on SIGTERM/);
  });

  it('refuses bad flags with a clear message and exit code 2', () => {
    const r = spawnSync(process.execPath, [CLI], { encoding: 'utf8', env: { ...process.env, RICOCHET_RELAY_TOKEN_SECRET: 'short' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/tokenSecret must be at least 32 bytes/);
  });

  it('starts from flags, serves /healthz, and exits 0 after draining on SIGTERM', async () => {
    const p = spawn(process.execPath, [CLI, '--http-port', '0', '--wt-port=-1', '--drain-ms', '200'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, RICOCHET_LOG_LEVEL: 'warn', RICOCHET_RELAY_TOKEN_SECRET: SECRET },
    });
    const info = await new Promise<{ httpPort: number }>((resolve) =>
      createInterface({ input: p.stdout! }).on('line', (l) => {
        if (l.includes('"listening"')) resolve(JSON.parse(l));
      }),
    );
    const h = await fetch(`http://127.0.0.1:${info.httpPort}/healthz`);
    expect(await h.json()).toMatchObject({ status: 'ok', sessions: 0 });
    const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
    p.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
