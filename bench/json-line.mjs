// Child processes of the benchmarks announce themselves (ports, summaries)
// as JSON lines on stdout, among log lines.
import { createInterface } from 'node:readline';

/** Resolves with the first stdout line of `proc` that parses as JSON and passes `pred`; rejects if it exits first. */
export function jsonLine(proc, pred) {
  return new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      try {
        const m = JSON.parse(l);
        if (pred(m)) resolve(m);
      } catch {
        // a log line
      }
    });
    // 'close' (stdout drained), not 'exit', which can come before the last line.
    proc.once('close', (c) => reject(new Error(`${proc.spawnfile} exited ${c}`)));
  });
}
