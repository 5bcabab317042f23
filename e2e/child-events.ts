// Waiting for a child process's JSON status lines ({"event": "listening", …}),
// shared by the e2e stacks.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Resolve with the first JSON line on `child`'s stdout with event `event` (its stdout keeps being read). */
export function waitEvent(child: ChildProcess, event: string, label: string, ms = 15_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const t = setTimeout(() => reject(new Error(`${label}: no ${event} line within ${ms} ms`)), ms);
    lines.on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (m.event === event) {
          clearTimeout(t);
          resolve(m);
        }
      } catch {
        // not JSON: ignore
      }
    });
    child.once('exit', (c, s) => {
      clearTimeout(t);
      reject(new Error(`${label} exited (${s ?? c})`));
    });
    child.once('error', (e) => {
      clearTimeout(t);
      reject(new Error(`${label}: ${e.message}`));
    });
  });
}
