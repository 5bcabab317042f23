// CPU time of another process, for the benchmarks that compare servers by
// work done rather than by wall time (the machines are shared and noisy).
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime/stime (`getconf CLK_TCK`). */
const CLK_TCK = 100;

/** CPU seconds (user + system) process `pid` has used; Linux /proc, 10 ms grain. */
export function cpuSeconds(pid) {
  // The command name may hold spaces or ')': fields start after the last ') '.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}
