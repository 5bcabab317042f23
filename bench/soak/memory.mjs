// Memory sampling and the "flat" rule for the soak.
import { readFileSync } from 'node:fs';

/** Resident set size of a process, from /proc (Linux). */
export function rssBytes(pid) {
  return procStatus(pid).rss;
}

/** RSS and what it is made of (anonymous vs file-backed), and the thread count: to attribute a change. */
export function procStatus(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => {
    const m = text.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'));
    if (!m) throw new Error(`no ${name} for pid ${pid}`);
    return Number(m[1]);
  };
  return { rss: field('VmRSS') * 1024, rssAnon: field('RssAnon') * 1024, rssFile: field('RssFile') * 1024, threads: field('Threads') };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Least-squares slope in units per minute (reported, not judged: one outlier moves it). */
function slopePerMinute(points) {
  const n = points.length;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const mv = points.reduce((a, p) => a + p.v, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.v - mv);
    den += (p.t - mt) ** 2;
  }
  return den ? (num / den) * 60 : 0;
}

export const MIN_SAMPLES = 6;

/** The rule, in words, for the report. */
export function describeRule(warmupSeconds) {
  return (
    `samples after a forced GC every few seconds; the first ${warmupSeconds} s are warm-up and ignored; ` +
    `of the rest, the median of the last third may exceed the median of the first third by at most ` +
    `max(relative × first, absolute) (per metric below); medians, so one GC-timing outlier cannot decide it`
  );
}

/**
 * Judges one series `[{ t: seconds, v: bytes }]` flat or not.
 * Returns the figures the verdict rests on.
 */
export function judgeFlat(series, { warmupSeconds, relative, absoluteBytes }) {
  const used = series.filter((p) => p.t >= warmupSeconds && Number.isFinite(p.v));
  if (used.length < MIN_SAMPLES) return { flat: false, samples: used.length, why: `fewer than ${MIN_SAMPLES} samples after warm-up` };
  const third = Math.floor(used.length / 3);
  const first = median(used.slice(0, third).map((p) => p.v));
  const last = median(used.slice(-third).map((p) => p.v));
  const limit = Math.max(relative * first, absoluteBytes);
  const growth = last - first;
  return {
    flat: growth <= limit,
    samples: used.length,
    first,
    last,
    growth,
    limit,
    relative,
    absoluteBytes,
    min: Math.min(...used.map((p) => p.v)),
    max: Math.max(...used.map((p) => p.v)),
    slopePerMinute: slopePerMinute(used),
  };
}
