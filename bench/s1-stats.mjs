// S1 statistics and the markdown table: latency summaries per protocol and
// loss cell, with the issue's goals printed beside the measured figures.

/** Nearest-rank percentile of ascending `sorted`. */
export function percentile(sorted, q) {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}

/** Quantiles `ps` of the numbers in `v` (nearest rank), or null for none. */
export function quantiles(v, ps) {
  if (v.length === 0) return null;
  const s = Float64Array.from(v).sort();
  return ps.map((p) => percentile(s, p));
}

/** Latency summary in ms (inputs in µs). */
export function summarize(latenciesUs) {
  const v = Float64Array.from(latenciesUs).sort();
  const n = v.length;
  if (n === 0) return null;
  const mean = v.reduce((a, x) => a + x, 0) / n;
  const sd = Math.sqrt(v.reduce((a, x) => a + (x - mean) ** 2, 0) / n);
  const ms = (us) => us / 1000;
  return {
    n,
    mean: ms(mean),
    sd: ms(sd),
    meanPlusSd: ms(mean + sd),
    p50: ms(percentile(v, 0.5)),
    p99: ms(percentile(v, 0.99)),
    p999: ms(percentile(v, 0.999)),
    max: ms(v[n - 1]),
    // Share of messages later than S1's 25 ms: p99 ≤ 25 ms means ≤ 1 %.
    over25: v.filter((x) => x > 25_000).length / n,
  };
}

/**
 * The issue's goals for Ricochet in each cell, as checks over the cell's rows
 * (`rows` by protocol name). Each returns { text, met } or null.
 */
export const GOALS = {
  s1_1pct: (r) => r.stats && { text: `mean+sd ≤ 13 ms`, met: r.stats.meanPlusSd <= 13 },
  s1_5pct: (r) =>
    r.stats && {
      text: 'p99 ≤ 25 ms, ≤ 30 % extra bytes',
      met: r.stats.p99 <= 25 && r.wirePerPayload !== null && r.wirePerPayload <= 1.3,
    },
  s1_bursty: (r, rows) => {
    const kcp = rows.kcp?.stats;
    if (!r.stats || !kcp) return null;
    return { text: `p99 ≤ ½ KCP's (${(kcp.p99 / 2).toFixed(1)} ms)`, met: r.stats.p99 <= kcp.p99 / 2 };
  },
};

/**
 * Issue 16's goals for the latency-targeted row (`ricochet_ll`): p99 ≤ 25 ms
 * at ≤ 2.0 wire B / payload B at 5 %, and bursty within 10 % of the bound's
 * 2.67 (bench/bounds/, Ricochet's headers and one ACK a message).
 */
export const LATENCY_TARGET_GOALS = {
  s1_5pct: { bytes: 2.0 },
  s1_bursty: { bytes: 2.67 * 1.1 },
};

export function latencyTargetGoal(cell, r) {
  const g = LATENCY_TARGET_GOALS[cell];
  if (!g || !r.stats) return null;
  const late = r.stats.over25 === undefined ? '' : `; ${(100 * r.stats.over25).toFixed(2)} % over 25 ms`;
  return {
    text: `p99 ≤ 25 ms at ≤ ${g.bytes.toFixed(2)} wire B / payload B (issue 16${late})`,
    met: r.stats.p99 <= 25 && r.wirePerPayload !== null && r.wirePerPayload <= g.bytes,
  };
}

/**
 * Issue 16, on every profile: Ricochet's default configuration no slower than
 * kcp-go at p50, p99 and p99.9 (0.1 ms, the tables' resolution, counts as a
 * tie: at the link's floor both deliver alike) at no more than 1.5× its bytes.
 */
export function beatsKcp(r, rows) {
  const kcp = rows.kcp;
  if (!r.stats || !kcp?.stats) return null;
  const tenths = (ms) => Math.round(ms * 10);
  const faster = ['p50', 'p99', 'p999'].every((q) => tenths(r.stats[q]) <= tenths(kcp.stats[q]) + 1);
  const bytes = r.wirePerPayload !== null && kcp.wirePerPayload !== null && r.wirePerPayload <= 1.5 * kcp.wirePerPayload;
  return { text: 'p50/p99/p99.9 ≤ kcp-go\'s, ≤ 1.5× its bytes', met: faster && bytes };
}

const f1 = (x) => (x === undefined || x === null ? '–' : x.toFixed(1));

/** One cell's markdown table. `rows`: { [protocol]: { label, stats, wirePerPayload, sent, undelivered, note } }. */
export function cellTable(cell, rows) {
  const goal = GOALS[cell.name];
  const lines = [
    `| protocol | delivered | mean | sd | mean+sd | p50 | p99 | p99.9 | max | wire B / payload B | goal |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [key, r] of Object.entries(rows)) {
    const s = r.stats;
    const goals = [
      r.ricochet && goal ? goal(r, rows) : null,
      key === 'ricochet' ? beatsKcp(r, rows) : null,
      key === 'ricochet_ll' ? latencyTargetGoal(cell.name, r) : null,
    ];
    const goalText = goals
      .filter(Boolean)
      .map((g) => `${g.text}: **${g.met ? 'met' : 'not met'}**`)
      .join('; ');
    const delivered = `${s?.n ?? 0} / ${r.sent ?? '?'}`;
    const wire = r.wirePerPayload === null ? '–' : r.wirePerPayload.toFixed(3);
    lines.push(
      `| ${r.label} | ${delivered} | ${f1(s?.mean)} | ${f1(s?.sd)} | ${f1(s?.meanPlusSd)} | ${f1(s?.p50)} | ${f1(s?.p99)} | ${f1(s?.p999)} | ${f1(s?.max)} | ${wire} | ${goalText} |`,
    );
  }
  return lines.join('\n');
}

/** The emulator's view of the cell: loss per direction and its own timing error. */
export function linkLine(stats) {
  const d = (x) =>
    `${x.packets_in} packets, ${((100 * x.lost) / Math.max(1, x.packets_in)).toFixed(2)} % lost, delay p50 ${f1(x.delay_us.p50 / 1000)} / p99 ${f1(x.delay_us.p99 / 1000)} ms, late_us p99 ${x.late_us.p99} max ${x.late_us.max}`;
  return `link A→B: ${d(stats.a_to_b)}; B→A: ${d(stats.b_to_a)}`;
}

/**
 * Issue 16's goal for a WebTransport row against its native row: no more than 1.5 ms slower at
 * p50 and p99, at most 10 % more wire bytes (faster or cheaper than native passes).
 */
export function browserGoal(row, native) {
  if (!row.stats || !native?.stats || row.wirePerPayload === null || !native.wirePerPayload) return null;
  const d50 = row.stats.p50 - native.stats.p50;
  const d99 = row.stats.p99 - native.stats.p99;
  const bytes = row.wirePerPayload / native.wirePerPayload;
  return { d50, d99, bytes, met: d50 <= 1.5 && d99 <= 1.5 && bytes <= 1.1 };
}

const signed = (x) => (x === undefined || x === null ? '–' : `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}`);
const pp = (p) => (p && p.n > 0 && p.p50 !== null ? `${p.p50.toFixed(2)} / ${p.p99.toFixed(2)}` : '–');

/**
 * One cell's browser rows against their native rows, beside the page's step
 * timings. `rows`: the cell's rows by key; `browser`: { [key]: { row } }.
 */
export function browserTable(rows, browser) {
  const lines = [
    '| browser row | vs native row | Δp50 | Δp99 | bytes ÷ native | ≤ 1.5 ms slower, ≤ 10 % more bytes (issue 16) | timer late p50 / p99 | send + flush p50 / p99 | held for pacing | write done p50 / p99 | performance.now() step | SDK packets out → at relay |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [key, { row }] of Object.entries(browser)) {
    const native = row.native ? rows[row.native] : null;
    const g = native ? browserGoal(row, native) : null;
    const st = row.sender?.steps;
    const relay = row.relay ? row.relay.toBackend : null;
    const out = row.sender?.packetsOut;
    const reach = relay !== null && out ? `${out} → ${relay} (${((100 * (out - relay)) / out).toFixed(1)} % missing)` : out ? `${out}` : '–';
    lines.push(
      `| ${key} | ${row.native ?? '– (WebSocket, reference)'} | ${signed(g?.d50)} | ${signed(g?.d99)} | ${g ? g.bytes.toFixed(2) : '–'} | ${g ? `**${g.met ? 'met' : 'not met'}**` : ''} | ${pp(st?.tickLateMs)} | ${pp(st?.sendCallMs)} | ${st ? st.heldByPacing : '–'} | ${pp(st?.writeDoneMs)} | ${st ? `${(st.clockGranularityMs * 1000).toFixed(0)} µs` : '–'} | ${reach} |`,
    );
  }
  return lines.join('\n');
}
