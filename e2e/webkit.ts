// WebKitGTK, the suite's third browser, driven over W3C WebDriver. Playwright
// cannot drive it here: its WebKit project needs Playwright's own WebKit
// build, which cannot be downloaded. Debian's WebKitGTK (2.50) comes with
// MiniBrowser (package libwebkit2gtk-4.1-0) and WebKitWebDriver
// (webkit2gtk-driver); MiniBrowser has no headless mode, so it runs on a
// private Xvfb display (xvfb). scripts/setup.mjs installs all three.
//
// startWebKit() starts Xvfb (display number chosen by Xvfb itself, so runs in
// parallel do not collide), WebKitWebDriver on a free 127.0.0.1 port, and one
// MiniBrowser session; each in its own process group, which quit() ends. The
// W3C client is a few fetch calls (Node's own): navigate, execute, quit.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

/** Debian's multiarch library directory (as in scripts/setup.mjs, which installs these). */
const MULTIARCH = ({ x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' } as Record<string, string>)[process.arch] ?? `${process.arch}-linux-gnu`;
export const MINIBROWSER = process.env.RICOCHET_MINIBROWSER || `/usr/lib/${MULTIARCH}/webkit2gtk-4.1/MiniBrowser`;
export const WEBKIT_WEBDRIVER = process.env.RICOCHET_WEBKIT_WEBDRIVER || '/usr/bin/WebKitWebDriver';
export const XVFB = process.env.RICOCHET_XVFB || '/usr/bin/Xvfb';

export interface WebKitOptions {
  /** Instead of MINIBROWSER (e.g. a wrapper that traces it); it must pass its arguments on. */
  binary?: string;
  /** WebKit feature flags, e.g. ['+WebTransport'] (MiniBrowser `--features`). */
  features?: string[];
  /** More MiniBrowser arguments. */
  args?: string[];
  /** More environment for WebKitWebDriver and so MiniBrowser and its web/network processes (e.g. WEBKIT_DEBUG). */
  env?: Record<string, string>;
  /** Longest an executeAsync() may run, ms. Default 120 000. */
  scriptTimeoutMs?: number;
}

export interface WebKit {
  /** The browser's version as its WebDriver session reports it (WebKitGTK's). */
  readonly version: string;
  navigate(url: string): Promise<void>;
  /** Runs `body` as a function of `args`; resolves with what it returns (a Promise is awaited). */
  execute<T = unknown>(body: string, ...args: unknown[]): Promise<T>;
  /**
   * Calls the page's `window[fn](arg)`, which returns a Promise, and resolves
   * with its value; a rejection becomes an Error here.
   */
  call<T = unknown>(fn: string, arg?: unknown): Promise<T>;
  /** Polls `body` until it returns something truthy. */
  waitFor(body: string, timeoutMs?: number): Promise<void>;
  /** MiniBrowser, WebKitWebDriver and their processes' output so far (with WEBKIT_DEBUG, WebKit's log). */
  log(): string;
  quit(): Promise<void>;
}

/** True when the three executables are installed. */
export function webkitAvailable(): boolean {
  return [MINIBROWSER, WEBKIT_WEBDRIVER, XVFB].every((p) => existsSync(p));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Ends a process group started here (detached) with SIGTERM, then SIGKILL. */
async function stopGroup(p: ChildProcess | undefined): Promise<void> {
  if (!p?.pid || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  try {
    process.kill(-p.pid, 'SIGTERM');
  } catch {
    return;
  }
  const t = setTimeout(() => {
    try {
      process.kill(-p.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }, 3_000);
  await exited;
  clearTimeout(t);
}

/** Start Xvfb; resolves with its display (":N") once it accepts clients. */
async function startXvfb(logs: string[]): Promise<{ proc: ChildProcess; display: string }> {
  // -displayfd: Xvfb picks a free display and writes its number to fd 3 when ready.
  const proc = spawn(XVFB, ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp', '-noreset'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    detached: true,
  });
  proc.stderr!.on('data', (d) => logs.push(`[xvfb] ${d}`));
  const display = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('Xvfb did not report a display within 10 s')), 10_000);
    createInterface({ input: proc.stdio[3] as NodeJS.ReadableStream }).once('line', (l) => {
      clearTimeout(t);
      resolve(`:${l.trim()}`);
    });
    proc.once('exit', (c) => reject(new Error(`Xvfb exited (${c}): ${logs.join('')}`)));
  });
  return { proc, display };
}

interface W3CResponse {
  value: unknown;
}

export async function startWebKit(o: WebKitOptions = {}): Promise<WebKit> {
  for (const [p, pkg] of [[MINIBROWSER, 'libwebkit2gtk-4.1-0'], [WEBKIT_WEBDRIVER, 'webkit2gtk-driver'], [XVFB, 'xvfb']]) {
    if (!existsSync(p)) throw new Error(`${p} is missing: npm test installs it (apt-get install ${pkg})`);
  }
  const logs: string[] = [];
  const xvfb = await startXvfb(logs);
  let driver: ChildProcess | undefined;
  try {
    const port = await freePort();
    driver = spawn(WEBKIT_WEBDRIVER, [`--port=${port}`, '--host=local'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, DISPLAY: xvfb.display, WAYLAND_DISPLAY: '', GDK_BACKEND: 'x11', ...o.env },
    });
    driver.stdout!.on('data', (d) => logs.push(String(d)));
    driver.stderr!.on('data', (d) => logs.push(String(d)));
    const base = `http://127.0.0.1:${port}`;

    const w3c = async (method: string, path: string, body?: unknown): Promise<unknown> => {
      const res = await fetch(base + path, {
        method,
        ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
      });
      const json = (await res.json()) as W3CResponse;
      const v = json.value as { error?: string; message?: string } | null;
      if (!res.ok || (v && typeof v === 'object' && 'error' in v && typeof v.error === 'string')) {
        throw new Error(`WebDriver ${method} ${path}: ${v?.error ?? res.status}: ${v?.message ?? ''}`);
      }
      return json.value;
    };

    // The driver answers /status once it listens.
    const t0 = Date.now();
    for (;;) {
      try {
        await w3c('GET', '/status');
        break;
      } catch (e) {
        if (driver.exitCode !== null) throw new Error(`WebKitWebDriver exited (${driver.exitCode}): ${logs.join('')}`);
        if (Date.now() - t0 > 10_000) throw new Error(`WebKitWebDriver did not answer within 10 s: ${e}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    const args = ['--automation', ...(o.features?.length ? [`--features=${o.features.join(',')}`] : []), ...(o.args ?? [])];
    const session = (await w3c('POST', '/session', {
      capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: o.binary ?? MINIBROWSER, args } } },
    })) as { sessionId: string; capabilities: { browserVersion?: string } };
    const s = `/session/${session.sessionId}`;
    await w3c('POST', `${s}/timeouts`, { script: o.scriptTimeoutMs ?? 120_000, pageLoad: 30_000 });

    const execute = async <T>(body: string, ...a: unknown[]): Promise<T> => (await w3c('POST', `${s}/execute/sync`, { script: body, args: a })) as T;
    let quitting: Promise<void> | undefined;
    const d = driver;
    return {
      version: session.capabilities.browserVersion ?? 'unknown',
      navigate: async (url) => void (await w3c('POST', `${s}/url`, { url })),
      execute,
      async call<T>(fn: string, arg?: unknown): Promise<T> {
        // Async script: the last argument is the callback. A rejection comes back
        // as { __error } so that its message survives the WebDriver round trip.
        const r = (await w3c('POST', `${s}/execute/async`, {
          script: `const [fn, arg, done] = arguments;
            Promise.resolve().then(() => window[fn](arg)).then(
              (v) => done({ ok: v }),
              (e) => done({ __error: String(e && e.stack ? e + '\\n' + e.stack : e) }));`,
          args: [fn, arg ?? null],
        })) as { ok?: T; __error?: string };
        if (r && '__error' in r) throw new Error(`${fn}: ${r.__error}`);
        return r.ok as T;
      },
      async waitFor(body, timeoutMs = 10_000) {
        const end = Date.now() + timeoutMs;
        while (!(await execute<unknown>(body))) {
          if (Date.now() > end) throw new Error(`timed out waiting for: ${body}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      log: () => logs.join(''),
      quit() {
        quitting ??= (async () => {
          try {
            await w3c('DELETE', s);
          } catch {
            // the browser is gone already
          }
          await stopGroup(d);
          await stopGroup(xvfb.proc);
        })();
        return quitting;
      },
    };
  } catch (e) {
    await stopGroup(driver);
    await stopGroup(xvfb.proc);
    throw e;
  }
}
