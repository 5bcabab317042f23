// The soak's markdown summary: traffic and integrity per transport, the
// memory verdicts with the rule and figures, a memory timeline, the checks.
const MiB = 1 << 20;
const mib = (b) => (b / MiB).toFixed(2);
const signedMib = (b) => `${b >= 0 ? '+' : ''}${mib(b)}`;
const pct = (a, b) => (b ? ((100 * a) / b).toFixed(1) : '–');

function trafficTable(r) {
  const rows = [
    '| transport | ticks (Hz) | tick msgs sent / echoed | 6 KB msgs sent / echoed | unreliable sent / echoed | lost | misordered | corrupt | longest stall (at) | stalls > 100 / 250 ms | page main thread most late (at) | tick RTT p50 / p99 / max | 6 KB RTT p50 / p99 / max | FEC recovered | retransmissions | drain |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [t, f] of Object.entries(r.finals)) {
    const [tick, bulk, input] = f.channels;
    const lost = tick.missing + bulk.missing;
    const misordered = f.channels.reduce((n, c) => n + c.misordered, 0);
    const corrupt = f.channels.reduce((n, c) => n + c.corrupt, 0);
    const rtt = (x) => `${x.p50} / ${x.p99} / ${x.max} ms`;
    rows.push(
      `| ${t} | ${f.ticks} (${f.tickHz}) | ${tick.sent} / ${tick.delivered} | ${bulk.sent} / ${bulk.delivered} | ${input.sent} / ${input.delivered} (${pct(input.delivered, input.sent)} %) | ${lost} | ${misordered} | ${corrupt} | ${f.stall.maxGapMs} ms (${f.stall.atSeconds} s) | ${f.stall.over100ms} / ${f.stall.over250ms} | ${f.maxTickLateMs} ms (${f.maxTickLateAtSeconds} s) | ${rtt(f.rttMs.tick)} | ${rtt(f.rttMs.bulk)} | ${f.core.fecRecovered} | ${f.core.retransmissions} | ${f.drainMs} ms |`,
    );
  }
  return rows.join('\n');
}

function linkTable(r) {
  const rows = ['| relay session | direction | datagrams | lost | duplicated | reordered |', '|---|---|---|---|---|---|'];
  for (const s of r.impairment?.sessions ?? []) {
    for (const dir of ['up', 'down']) {
      const c = s.counters?.[dir];
      if (c) rows.push(`| ${s.sub} | ${dir === 'up' ? 'page → server' : 'server → page'} | ${c.sent} | ${c.lost + c.queueDropped} (${pct(c.lost + c.queueDropped, c.sent)} %) | ${c.duplicated} | ${c.reordered} |`);
    }
  }
  return rows.join('\n');
}

function memoryTable(r) {
  const rows = [
    '| process | metric | samples | first third median | last third median | growth | allowed | slope | verdict |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const m of r.memory) {
    const v = m.verdict;
    if (v.first === undefined) {
      rows.push(`| ${m.who} | ${m.label} | ${v.samples} | – | – | – | – | – | **not flat**: ${v.why} |`);
      continue;
    }
    rows.push(
      `| ${m.who} | ${m.label} | ${v.samples} | ${mib(v.first)} MiB | ${mib(v.last)} MiB | ${signedMib(v.growth)} MiB | ≤ ${mib(v.limit)} MiB (max(${v.relative * 100} %, ${mib(v.absoluteBytes)} MiB)) | ${signedMib(v.slopePerMinute)} MiB/min | ${v.flat ? 'flat' : '**not flat**'} |`,
    );
  }
  return rows.join('\n');
}

/** At most ~12 evenly spaced samples, so long soaks stay readable. */
function timelineTable(r) {
  const transports = Object.keys(r.finals);
  const head = ['t (s)', ...transports.flatMap((t) => [`${t} JS heap`, `${t} wasm`]), 'relay heap', 'relay RSS', 'echo RSS'];
  const rows = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  const step = Math.max(1, Math.ceil(r.samples.length / 12));
  const picked = r.samples.filter((_, i) => i % step === 0 || i === r.samples.length - 1);
  for (const s of picked) {
    const cells = [s.t.toFixed(0), ...transports.flatMap((t) => [s.pages[t].jsHeapUsed === null ? '–' : mib(s.pages[t].jsHeapUsed), mib(s.pages[t].wasmMemory)]), mib(s.relay.heapUsed), mib(s.relay.rss), mib(s.echo.rss)];
    rows.push(`| ${cells.join(' | ')} |`);
  }
  return `${rows.join('\n')}\n\n(MiB; page JS heap = V8 heap used + ArrayBuffer backing stores after a CDP HeapProfiler.collectGarbage, – in Firefox: no CDP; relay heap = V8 heap used + external after two gc() calls)`;
}

export function renderMarkdown(r) {
  const o = r.options;
  return [
    `## S4 soak (${o.browser ?? 'chromium'}): ${o.minutes} min, relay impairment \`${o.profile}\` both ways, FEC \`${o.fec}\`, seed ${o.seed}`,
    '',
    `${o.browser === 'firefox' ? 'Firefox' : 'Chromium'} pages (one WebTransport, one WebSocket, concurrently) → relay → native echo server. Per 60 Hz tick: one reliable-ordered message (32–431 B); on 10 % of ticks a 6 KB reliable-ordered message on a second channel (fragmented); on 10 % an unreliable-sequenced one. Every payload self-checking; "lost" = reliable messages never echoed after the drain.`,
    '',
    trafficTable(r),
    '',
    `Relay event loop, most delayed: ${r.relayLoopDelay.ms} ms (in the ${r.options.sampleSeconds} s before ${r.relayLoopDelay.beforeSeconds} s; includes the forced GCs of sampling). A stall that coincides with a late page main thread or relay loop is the host's CPU, not the network.`,
    '',
    'What the relay\'s simulated links did:',
    '',
    linkTable(r),
    '',
    `### Memory: ${r.memoryRule}`,
    '',
    memoryTable(r),
    '',
    timelineTable(r),
    '',
    '### Checks',
    '',
    ...r.checks.map((c) => `- [${c.pass ? 'x' : ' '}] ${c.name}: ${c.detail}`),
    '',
    `**${r.passed} passed, ${r.failed} failed**`,
  ].join('\n');
}
