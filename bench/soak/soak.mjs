#!/usr/bin/env node
// Scenario S4, the soak: Chromium or Firefox → relay (impaired both ways) → native echo
// server, a WebTransport page and a WebSocket page at once, every feature on
// (FEC, coalescing, fragmentation, three channels). Every echoed payload is
// checked; memory is sampled after forced GCs; the verdict is a list of
// checks ("N passed, N failed" for scripts/test.mjs). Exit 1 on any failure.
//
//   node bench/soak/soak.mjs [--minutes 2] [--profile mobile_lossy] [--fec balanced]
//                            [--sample-seconds 5] [--seed 1] [--drain-seconds 30]
//                            [--browser chromium|firefox]
// Firefox has no CDP: its pages' JS heap is not sampled (no forced GC or heap
// figure reachable over WebDriver BiDi); their wasm memory, the relay and the
// echo server are judged as in Chromium.
// `npm run soak -- --minutes N` builds first (scripts/soak.mjs), then runs this.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeRule, judgeFlat, procStatus, rssBytes } from './memory.mjs';
import { renderMarkdown } from './report.mjs';
import { ROOT, launchBrowser, startEcho, startPages, startRelay } from './stack.mjs';

const TRANSPORTS = ['webtransport', 'websocket'];
const MiB = 1 << 20;
/** Memory series judged flat, with their tolerances (why: GC and allocator granularity differ). */
const MEMORY_RULES = {
  pageJsHeap: { label: 'JS heap + ArrayBuffer stores used (after GC)', relative: 0.1, absoluteBytes: 0.5 * MiB },
  pageWasm: { label: 'wasm memory (core heap high-water)', relative: 0.1, absoluteBytes: 0.5 * MiB }, // grows in 64 KiB pages
  relayHeap: { label: 'V8 heap + external (Buffers, wasm) used (after GC)', relative: 0.1, absoluteBytes: 1 * MiB },
  // Outside the V8 heap (RSS − V8 heap total): V8 grows its young generation once, ~8 MiB some minutes in,
  // by its own sizing policy; what V8 holds is judged by the heap-used series after GC.
  relayRss: { label: 'RSS outside the V8 heap (RSS − V8 heap total)', relative: 0.1, absoluteBytes: 8 * MiB },
  echoRss: { label: 'RSS', relative: 0.1, absoluteBytes: 1 * MiB },
};

function options(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: 'string', default: '2' },
      profile: { type: 'string', default: 'mobile_lossy' },
      fec: { type: 'string', default: 'balanced' },
      'sample-seconds': { type: 'string', default: '5' },
      seed: { type: 'string', default: '1' },
      'drain-seconds': { type: 'string', default: '30' },
      browser: { type: 'string', default: 'chromium' },
    },
  });
  const o = {
    minutes: Number(values.minutes),
    profile: values.profile,
    fec: values.fec,
    sampleSeconds: Number(values['sample-seconds']),
    seed: Number(values.seed),
    drainSeconds: Number(values['drain-seconds']),
    browser: values.browser,
  };
  if (o.browser !== 'chromium' && o.browser !== 'firefox') throw new Error('--browser must be chromium or firefox');
  if (!(o.minutes > 0) || !(o.sampleSeconds > 0) || !Number.isInteger(o.seed) || !(o.drainSeconds > 0)) {
    throw new Error('--minutes, --sample-seconds and --drain-seconds must be positive numbers, --seed an integer');
  }
  // Warm-up: long enough for buffers and JIT to settle, short enough to leave samples to judge.
  o.warmupSeconds = Math.max(20, Math.round(o.minutes * 60 * 0.15));
  return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One page per transport, each in its own browser context (its own renderer and heap). */
async function openPage(browser, browserName, pagesUrl, transport, errors) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`${transport}: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(`${transport} console: ${m.text()}`));
  await page.goto(pagesUrl);
  await page.waitForFunction(() => 'ricochetSoak' in window);
  const cdp = browserName === 'chromium' ? await context.newCDPSession(page) : null;
  return {
    transport,
    page,
    context,
    /** Page JS heap and ArrayBuffer backing stores (where leaked payloads would live) after a full GC (CDP; null in Firefox). */
    async heap() {
      if (!cdp) return null;
      const t0 = performance.now();
      await cdp.send('HeapProfiler.collectGarbage');
      const gcMs = performance.now() - t0;
      const { usedSize, backingStorageSize = 0 } = await cdp.send('Runtime.getHeapUsage');
      return { usedSize, backingStorageSize, gcMs };
    },
    snapshot: () => page.evaluate(() => window.ricochetSoak.snapshot()),
  };
}

async function takeSample(t0, pages, relay, echo) {
  const sample = { t: (performance.now() - t0) / 1000, pages: {} };
  for (const p of pages) {
    const heap = await p.heap();
    const snap = await p.snapshot();
    sample.pages[p.transport] = { jsHeapUsed: heap ? heap.usedSize + heap.backingStorageSize : null, backingStorage: heap?.backingStorageSize ?? null, gcMs: heap?.gcMs ?? null, wasmMemory: snap.wasmMemoryBytes, snapshot: snap };
  }
  const r = await relay.sample();
  const relayProc = procStatus(relay.pid);
  sample.relay = { heapUsed: r.memory.heapUsed + r.memory.external, v8HeapUsed: r.memory.heapUsed, v8HeapTotal: r.memory.heapTotal, rss: relayProc.rss, rssAnon: relayProc.rssAnon, threads: relayProc.threads, external: r.memory.external, arrayBuffers: r.memory.arrayBuffers, gcMs: r.gcMs, loopDelayMaxMs: r.loopDelayMaxMs };
  sample.impairment = r.impairment;
  sample.echo = { rss: rssBytes(echo.pid) };
  return sample;
}

function progressLine(s) {
  const mb = (b) => (b / MiB).toFixed(1);
  const pages = TRANSPORTS.map((k) => {
    const p = s.pages[k];
    const c = p.snapshot.channels;
    return `${k} ${c[0].delivered}/${c[0].sent} tick, ${c[1].delivered}/${c[1].sent} bulk, ${p.jsHeapUsed === null ? `wasm ${mb(p.wasmMemory)}` : `heap ${mb(p.jsHeapUsed)}`} MiB`;
  });
  return `[soak] ${s.t.toFixed(0).padStart(5)} s | ${pages.join(' | ')} | relay heap ${mb(s.relay.heapUsed)} rss ${mb(s.relay.rss)} | echo rss ${mb(s.echo.rss)} MiB`;
}

/** Every check the soak makes, each able to fail. */
function checks(o, finals, memory, errors) {
  const list = [];
  const add = (name, pass, detail) => list.push({ name, pass: !!pass, detail });
  for (const t of TRANSPORTS) {
    const f = finals[t];
    const [tick, bulk, input] = f.channels;
    add(`${t}: connected over ${t}`, f.kind === t, f.kind);
    // 80 %: a throttled page (timers at 1 Hz) fails, a busy shared machine does not.
    add(`${t}: traffic near 60 Hz (≥ 48 Hz achieved)`, f.tickHz >= 48, `${f.tickHz} Hz, ${f.ticks} ticks, ${f.tickResets} schedule resets`);
    add(`${t}: no corrupt payload`, f.channels.every((c) => c.corrupt === 0), f.channels.map((c) => c.corrupt).join('/'));
    add(
      `${t}: no reliable message lost (all echoed after the drain)`,
      tick.missing === 0 && bulk.missing === 0 && tick.lostReceipts === 0 && bulk.lostReceipts === 0,
      `missing ${tick.missing} tick, ${bulk.missing} bulk; lost receipts ${tick.lostReceipts}/${bulk.lostReceipts}`,
    );
    add(`${t}: no misordered message`, f.channels.every((c) => c.misordered === 0), f.channels.map((c) => c.misordered).join('/'));
    add(`${t}: exactly one receipt per message`, f.outstandingReceipts === 0 && f.doubleReceipts === 0, `${f.outstandingReceipts} outstanding, ${f.doubleReceipts} doubled`);
    add(`${t}: connection stayed open, no send refused`, !f.closed && f.channels.every((c) => c.sendErrors === 0), f.closed ? JSON.stringify(f.closed) : (f.lastSendError ?? 'ok'));
    // Sequenced delivery drops stale and lost messages; most must still arrive.
    add(`${t}: unreliable messages mostly delivered (≥ 50 %)`, input.sent > 0 && input.delivered >= input.sent / 2, `${input.delivered}/${input.sent}`);
  }
  for (const m of memory) add(`memory flat: ${m.who} ${m.label}`, m.verdict.flat, m.verdict.why ?? `grew ${(m.verdict.growth / MiB).toFixed(2)} MiB, allowed ${(m.verdict.limit / MiB).toFixed(2)} MiB`);
  add('no page errors', errors.length === 0, errors.slice(0, 3).join('; ') || 'none');
  return list;
}

/** The relay's worst event-loop delay and when (the sample interval it fell in). */
function mostLoopDelay(samples) {
  let worst = { ms: 0, beforeSeconds: 0 };
  // The first sample's interval is the relay's start-up and the handshakes, not the soak.
  for (const s of samples.slice(1)) if (s.relay.loopDelayMaxMs > worst.ms) worst = { ms: +s.relay.loopDelayMaxMs.toFixed(1), beforeSeconds: +s.t.toFixed(1) };
  return worst;
}

function judgeMemory(o, samples) {
  const series = (get) => samples.map((s) => ({ t: s.t, v: get(s) }));
  const out = [];
  const judge = (who, key, get) => out.push({ who, key, label: MEMORY_RULES[key].label, verdict: judgeFlat(series(get), { warmupSeconds: o.warmupSeconds, ...MEMORY_RULES[key] }) });
  for (const t of TRANSPORTS) {
    if (o.browser === 'chromium') judge(`${t} page`, 'pageJsHeap', (s) => s.pages[t].jsHeapUsed);
    judge(`${t} page`, 'pageWasm', (s) => s.pages[t].wasmMemory);
  }
  judge('relay', 'relayHeap', (s) => s.relay.heapUsed);
  judge('relay', 'relayRss', (s) => s.relay.rss - s.relay.v8HeapTotal);
  judge('echo server', 'echoRss', (s) => s.echo.rss);
  return out;
}

async function runSoak(o) {
  const errors = [];
  const cleanup = [];
  try {
    const echo = await startEcho();
    cleanup.push(() => echo.stop());
    const relay = await startRelay(echo.backend, o.profile);
    cleanup.push(() => relay.stop());
    const pagesServer = await startPages();
    cleanup.push(() => pagesServer.stop());
    const browser = await launchBrowser(o.browser);
    cleanup.push(() => browser.close());
    const pages = [];
    for (const t of TRANSPORTS) pages.push(await openPage(browser, o.browser, pagesServer.url, t, errors));

    console.log(`[soak] ${o.browser} ${browser.version()}, ${o.minutes} min, profile ${o.profile} on every relay session both ways, FEC ${o.fec}, seed ${o.seed}; sampling every ${o.sampleSeconds} s`);
    const started = await Promise.all(
      pages.map((p, i) =>
        p.page.evaluate((a) => window.ricochetSoak.start(a), { relayHttp: relay.httpUrl, token: relay.tokens[p.transport], transport: p.transport, fec: o.fec, seed: o.seed + i }),
      ),
    );
    console.log(`[soak] connected: ${started.map((s) => `${s.kind} (page ${s.visibility})`).join(', ')}`);
    const t0 = performance.now();
    const endAt = t0 + o.minutes * 60_000;
    const samples = [];
    while (performance.now() < endAt) {
      const s = await takeSample(t0, pages, relay, echo);
      samples.push(s);
      console.log(progressLine(s));
      if (TRANSPORTS.some((t) => s.pages[t].snapshot.closed)) break; // a dead connection ends the soak early; the checks say why
      await sleep(Math.max(0, Math.min(o.sampleSeconds * 1000 - ((performance.now() - t0) % (o.sampleSeconds * 1000)), endAt - performance.now())));
    }
    // Last sample while sessions live: the relay's link counters vanish with them.
    const last = await takeSample(t0, pages, relay, echo);
    samples.push(last);
    const finalsList = await Promise.all(pages.map((p) => p.page.evaluate((ms) => window.ricochetSoak.stop(ms), o.drainSeconds * 1000)));
    const finals = Object.fromEntries(finalsList.map((f, i) => [pages[i].transport, f]));
    const memory = judgeMemory(o, samples);
    const list = checks(o, finals, memory, errors);
    const result = {
      date: new Date().toISOString(),
      options: o,
      memoryRule: describeRule(o.warmupSeconds),
      memoryRules: MEMORY_RULES,
      finals,
      impairment: last.impairment,
      memory,
      relayLoopDelay: mostLoopDelay(samples),
      checks: list,
      passed: list.filter((c) => c.pass).length,
      failed: list.filter((c) => !c.pass).length,
      samples: samples.map(({ impairment, ...s }) => ({
        ...s,
        pages: Object.fromEntries(Object.entries(s.pages).map(([k, p]) => [k, { jsHeapUsed: p.jsHeapUsed, backingStorage: p.backingStorage, gcMs: p.gcMs, wasmMemory: p.wasmMemory, delivered: p.snapshot.channels.map((c) => c.delivered), stall: p.snapshot.stall }])),
      })),
    };
    return result;
  } finally {
    for (const f of cleanup.reverse()) await Promise.resolve(f()).catch(() => {});
  }
}

async function main() {
  const o = options(process.argv.slice(2));
  const result = await runSoak(o);
  const md = renderMarkdown(result);
  const dir = join(ROOT, 'results', 'soak');
  mkdirSync(dir, { recursive: true });
  const stamp = `${result.date.replace(/[:.]/g, '-')}${o.browser === 'chromium' ? '' : `-${o.browser}`}`;
  writeFileSync(join(dir, `soak-${stamp}.json`), JSON.stringify(result, null, 2));
  writeFileSync(join(dir, `soak-${stamp}.md`), md);
  console.log(`\n${md}`);
  console.log(`written: results/soak/soak-${stamp}.md and .json`);
  console.log(`${result.passed} passed, ${result.failed} failed`);
  process.exit(result.failed ? 1 : 0);
}

main().catch((e) => {
  console.error(`[soak] ERROR: ${e.stack ?? e.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
