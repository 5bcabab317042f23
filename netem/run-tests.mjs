#!/usr/bin/env node
// Self-verification of the impaired-link emulator through the real kernel
// path: namespaces, TUN devices, UDP/TCP sockets. `node netem/run-tests.mjs`
// (root; builds the emulator first). Each test sets up its own lab and tears
// it down; each is bounded in time, and so is the whole suite. Prints the
// measured figures next to the settings, then "N passed, N failed, N skipped".

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { EMULATOR_BIN, createLab, netemArgs, netemAvailable, realtimeAvailable } from './lab.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const PROBE = join(HERE, 'probe.mjs');
const SUITE_TIMEOUT_MS = 170_000;
const TEST_TIMEOUT_MS = 40_000;

const figures = [];
const note = (test, what, setting, measured) => figures.push({ test, what, setting, measured });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (x, d = 2) => (typeof x === 'number' ? x.toFixed(d) : String(x));

/** Run `cmd` to completion (bounded); returns { status, stdout, stderr }. */
function runSync(cmd, args, timeout = 300_000) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/**
 * Start probe.mjs `mode` in namespace `ns` of `lab` (under chrt when
 * available). `listening` resolves on a server's ready line, `result` on its
 * result line; `end()` closes its stdin, which ends a server.
 */
function probe(lab, ns, mode, flags) {
  const args = [PROBE, mode, ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, String(v)])];
  const child = lab.exec(ns, process.execPath, args, { rt: true, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  let onListening;
  const listening = new Promise((r) => {
    onListening = r;
  });
  const result = new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const ev = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (ev.event === 'listening') onListening();
        if (ev.event === 'result') resolve(ev);
      }
    });
    child.on('exit', (code) => reject(new Error(`probe ${mode} exited ${code} without a result: ${stderr.trim()}`)));
  });
  result.catch(() => {});
  return { child, listening, result, end: () => child.stdin.end() };
}

/** One-way UDP stream A → B; returns what was sent and what arrived. */
async function udpStream(lab, { count, pps, size = 16, port = 5001, lingerMs = 400 }) {
  const recv = probe(lab, 'B', 'udp-recv', { port, 'max-ms': 60_000 });
  await recv.listening;
  const send = probe(lab, 'A', 'udp-send', { to: `${lab.addrB}:${port}`, count, pps, size, 'max-ms': 60_000 });
  const sent = await send.result;
  await sleep(lingerMs);
  recv.end();
  const got = await recv.result;
  return { sent, got };
}

/** Lost sequence numbers, their bursts, and P(loss | previous lost). */
function lossPattern(count, seqs) {
  const seen = new Uint8Array(count);
  for (const s of seqs) seen[s] = 1;
  let lost = 0;
  let bursts = 0;
  let afterLoss = 0;
  let lostAfterLoss = 0;
  for (let i = 0; i < count; i++) {
    const l = !seen[i];
    if (i > 0 && !seen[i - 1]) {
      afterLoss++;
      if (l) lostAfterLoss++;
    }
    if (l) {
      lost++;
      if (i === 0 || seen[i - 1]) bursts++;
    }
  }
  return { lost, bursts, meanBurst: bursts ? lost / bursts : 0, condLoss: afterLoss ? lostAfterLoss / afterLoss : 0, unique: count - lost };
}

async function withLab(options, fn) {
  const lab = await createLab(options);
  try {
    return await fn(lab);
  } finally {
    await lab.close();
  }
}

// ---------------------------------------------------------------- tests

const tests = [];
const test = (name, fn, { needsLab = true } = {}) => tests.push({ name, fn, needsLab });

test(
  'cli_profiles_match_the_simulator_and_bad_options_are_refused',
  async () => {
    const names = runSync(EMULATOR_BIN, ['--list-profiles']).stdout.trim().split('\n');
    assert.deepEqual(names, ['perfect', 'lan', 'wifi', 'mobile_lossy', 's1_clean', 's1_1pct', 's1_5pct', 's1_bursty']);
    const p = JSON.parse(runSync(EMULATOR_BIN, ['--print-profile', '--profile', 's1_bursty']).stdout);
    assert.equal(p.a_to_b.loss.model, 'gilbert_elliott');
    assert.equal(p.a_to_b.loss.p_bad_to_good, 0.75);
    assert.equal(p.a_to_b.loss.mean_loss, 0.1);
    assert.equal(p.b_to_a.latency_us, 10_000);
    const custom = JSON.parse(runSync(EMULATOR_BIN, ['--print-profile', '--loss', '0.1', '--burst', '0.25']).stdout);
    assert.deepEqual(custom.a_to_b.loss, p.a_to_b.loss);
    for (const bad of [['--loss', '2'], ['--profile', 'nope'], ['--ns-a', 'x'], ['--burst', '0.3', '--print-profile']]) {
      const r = runSync(EMULATOR_BIN, bad);
      assert.equal(r.status, 2, `${bad.join(' ')} → ${r.status}`);
      assert.match(r.stderr, /ricochet-netem: /);
    }
  },
  { needsLab: false },
);

test(
  'netem_mode_is_detected_and_settings_map_to_tc_arguments',
  async () => {
    const p = JSON.parse(runSync(EMULATOR_BIN, ['--print-profile', '--profile', 's1_bursty', '--rate-kbps', '8000']).stdout);
    assert.deepEqual(netemArgs(p.a_to_b), [
      ...['delay', '11000us', '1000us', 'loss', 'gemodel', '8.3333333%', '75%', '100%', '0%'],
      ...['rate', '8000000bit', 'limit', '1000'],
    ]);
    const has = await netemAvailable();
    note('netem_mode', 'tc netem in this kernel', '-', has ? 'available' : 'missing (emulator mode)');
    if (!has) await assert.rejects(createLab({ mode: 'netem' }), /no netem/);
  },
  { needsLab: true },
);

test('delay_10ms_one_way_measured_through_the_kernel', async () =>
  withLab({ settings: { delayMs: 10 } }, async (lab) => {
    const { sent, got } = await udpStream(lab, { count: 600, pps: 300 });
    assert.equal(got.seqs.length, sent.sent, 'no loss configured');
    const p50 = quantile(got.owdUs, 0.5) / 1000;
    const p99 = quantile(got.owdUs, 0.99) / 1000;
    note('delay', 'one-way p50 / p99 (ms)', '10 / 10', `${fmt(p50)} / ${fmt(p99)}`);
    assert.ok(p50 >= 10 && p50 <= 11.5, `one-way p50 ${p50} ms`);
    assert.ok(p99 <= 25, `one-way p99 ${p99} ms`);

    const echo = probe(lab, 'B', 'udp-echo', { port: 5002 });
    await echo.listening;
    const ping = await probe(lab, 'A', 'udp-ping', { to: `${lab.addrB}:5002`, count: 300, pps: 100 }).result;
    echo.end();
    const rtt50 = quantile(ping.rttUs, 0.5) / 1000;
    note('delay', 'UDP echo RTT p50 (ms)', '20', fmt(rtt50));
    assert.equal(ping.rttUs.length, 300);
    assert.ok(rtt50 >= 20 && rtt50 <= 23, `rtt p50 ${rtt50} ms`);

    const s = await lab.stats();
    note('delay', 'emulator added delay p50 / p99 (ms)', '10', `${fmt(s.a_to_b.delay_us.p50 / 1000)} / ${fmt(s.a_to_b.delay_us.p99 / 1000)}`);
    note('delay', 'emulator wake-up lateness p99 (µs)', '-', s.a_to_b.late_us.p99);
    assert.ok(Math.abs(s.a_to_b.delay_us.p50 - 10_000) <= 500, `emulator p50 ${s.a_to_b.delay_us.p50}`);
    assert.equal(s.a_to_b.delivered, sent.sent + 300);
  }),
);

test('iid_loss_5pct_over_20000_packets_matches_and_counters_agree', async () =>
  withLab({ profile: 's1_5pct', seed: 11 }, async (lab) => {
    const count = 20_000;
    const { sent, got } = await udpStream(lab, { count, pps: 5000 });
    assert.equal(sent.sent, count);
    const pat = lossPattern(count, got.seqs);
    const rate = pat.lost / count;
    note('iid loss', 'loss rate (s1_5pct, 20k pkts)', '5.00 %', `${fmt(rate * 100)} %`);
    note('iid loss', 'mean burst length', '1.05', fmt(pat.meanBurst));
    assert.ok(rate >= 0.04 && rate <= 0.06, `loss ${rate}`);
    const s = await lab.stats();
    note('iid loss', 'emulator lost vs probe lost', '-', `${s.a_to_b.lost} vs ${pat.lost}`);
    assert.equal(s.a_to_b.packets_in, count, 'emulator saw every datagram');
    assert.equal(s.a_to_b.lost, pat.lost, 'emulator and probe agree on losses');
    assert.equal(s.a_to_b.delivered, got.seqs.length);
    assert.equal(s.b_to_a.packets_in, 0);
    assert.equal(s.kernel.a.tx_dropped, 0);
    const owd50 = quantile(got.owdUs, 0.5) / 1000;
    note('iid loss', 'one-way p50 with 2 ms jitter (ms)', '10-12', fmt(owd50));
    assert.ok(owd50 >= 10 && owd50 <= 13, `one-way p50 ${owd50}`);
  }),
);

test('gilbert_elliott_s1_bursty_has_10pct_mean_loss_in_bursts', async () =>
  withLab({ profile: 's1_bursty', seed: 12 }, async (lab) => {
    const count = 20_000;
    const { got } = await udpStream(lab, { count, pps: 5000 });
    const pat = lossPattern(count, got.seqs);
    const rate = pat.lost / count;
    note('bursty', 'loss rate (s1_bursty, 20k pkts)', '10.00 %', `${fmt(rate * 100)} %`);
    note('bursty', 'mean burst length', '1.33', fmt(pat.meanBurst));
    note('bursty', 'P(loss | previous lost)', '0.25', fmt(pat.condLoss));
    assert.ok(rate >= 0.085 && rate <= 0.115, `loss ${rate}`);
    assert.ok(pat.meanBurst > 1.2 && pat.meanBurst < 1.5, `mean burst ${pat.meanBurst}`);
    assert.ok(pat.condLoss > 0.18 && pat.condLoss < 0.32, `P(loss|loss) ${pat.condLoss}`);
    const s = await lab.stats();
    assert.equal(s.a_to_b.lost, pat.lost, 'emulator and probe agree on losses');
  }),
);

test('rate_limit_2000kbps_caps_throughput_and_tail_drops', async () =>
  withLab({ settings: { rateKbps: 2000 } }, async (lab) => {
    const count = 1200;
    const { sent, got } = await udpStream(lab, { count, pps: 400, size: 1000 });
    const ipBytes = got.sizes.slice(1).reduce((a, n) => a + n + 28, 0);
    const seconds = (got.atUs.at(-1) - got.atUs[0]) / 1e6;
    const bps = (ipBytes * 8) / seconds / 1000;
    note('rate', 'throughput at 1.6x offered load (kbit/s)', '2000', fmt(bps, 0));
    assert.ok(Math.abs(bps - 2000) / 2000 <= 0.07, `throughput ${bps} kbit/s`);
    const s = await lab.stats();
    const dropped = sent.sent - got.seqs.length;
    note('rate', 'queue drops emulator vs probe', '-', `${s.a_to_b.queue_dropped} vs ${dropped}`);
    assert.ok(dropped > 0, 'the queue overflowed');
    assert.equal(s.a_to_b.queue_dropped, dropped);
    // Default queue is 100 ms of the rate: a full queue adds ~100 ms.
    const p99 = s.a_to_b.delay_us.p99 / 1000;
    note('rate', 'added delay p99 with full queue (ms)', '~100', fmt(p99, 1));
    assert.ok(p99 > 80 && p99 < 130, `p99 ${p99} ms`);
  }),
);

test('duplication_and_reordering_are_seen_by_the_receiver_and_counted', async () =>
  withLab({ settings: { delayMs: 5, dup: 0.05, reorder: 0.05, reorderMs: 5 }, seed: 13 }, async (lab) => {
    const count = 5000;
    const { got } = await udpStream(lab, { count, pps: 2000 });
    const seen = new Set();
    let dups = 0;
    let late = 0;
    let highest = -1;
    for (const s of got.seqs) {
      if (seen.has(s)) dups++;
      else seen.add(s);
      if (s < highest) late++;
      highest = Math.max(highest, s);
    }
    const s = await lab.stats();
    note('dup/reorder', 'duplicates probe / emulator', '5 % = 250', `${dups} / ${s.a_to_b.duplicated}`);
    note('dup/reorder', 'late arrivals probe / reordered emulator', '5 % = 262', `${late} / ${s.a_to_b.reordered}`);
    assert.equal(seen.size, count, 'nothing lost');
    assert.equal(dups, s.a_to_b.duplicated);
    assert.ok(dups > 150 && dups < 350, `dups ${dups}`);
    assert.ok(s.a_to_b.reordered > 170 && s.a_to_b.reordered < 360, `reordered ${s.a_to_b.reordered}`);
    // A copy held back 5 ms is overtaken by ~10 later packets, so nearly every
    // reordered copy arrives late; only the stream's last packets can escape.
    assert.ok(Math.abs(late - s.a_to_b.reordered) <= 10, `late ${late} vs reordered ${s.a_to_b.reordered}`);
  }),
);

test('tcp_transfer_crosses_a_lossy_rate_limited_link_intact', async () =>
  withLab({ settings: { delayMs: 10, loss: 0.01, rateKbps: 20_000 }, seed: 14 }, async (lab) => {
    const cc = runSync('ip', ['netns', 'exec', lab.nsA, 'sysctl', '-n', 'net.ipv4.tcp_congestion_control']).stdout.trim();
    const bytes = 2 * 1024 * 1024;
    const sink = probe(lab, 'B', 'tcp-sink', { port: 5003, 'max-ms': 30_000 });
    await sink.listening;
    const source = await probe(lab, 'A', 'tcp-source', { to: `${lab.addrB}:5003`, bytes, 'max-ms': 30_000 }).result;
    const received = await sink.result;
    assert.equal(source.error, undefined, source.error);
    assert.equal(received.bytes, bytes);
    assert.equal(received.sha256, source.sha256);
    const kbps = (bytes * 8) / (source.ms / 1000) / 1000;
    const s = await lab.stats();
    note('tcp', `2 MiB, 1 % loss, 20 ms RTT (${cc})`, '≤ 20000 kbit/s', `${fmt(kbps, 0)} kbit/s, ${s.a_to_b.lost} lost segs`);
    assert.ok(kbps <= 20_000 * 1.05, `${kbps} kbit/s above the rate`);
    assert.ok(s.a_to_b.lost > 0, 'the link did lose segments');
  }),
);

test('block_udp_drops_every_udp_packet_while_tcp_crosses_intact', async () =>
  withLab({ settings: { delayMs: 5 }, seed: 15, blockUdp: true }, async (lab) => {
    const { sent, got } = await udpStream(lab, { count: 200, pps: 1000, port: 5004 });
    const bytes = 256 * 1024;
    const sink = probe(lab, 'B', 'tcp-sink', { port: 5005, 'max-ms': 20_000 });
    await sink.listening;
    const source = await probe(lab, 'A', 'tcp-source', { to: `${lab.addrB}:5005`, bytes, 'max-ms': 20_000 }).result;
    const received = await sink.result;
    const s = await lab.stats();
    note('block-udp', 'UDP datagrams through, TCP bytes through', '0, all', `${got.seqs.length}/${sent.sent}, ${received.bytes}/${bytes}`);
    assert.equal(got.seqs.length, 0);
    assert.equal(received.sha256, source.sha256);
    assert.ok(s.a_to_b.udp_blocked >= sent.sent, `udp_blocked ${s.a_to_b.udp_blocked} < ${sent.sent}`);
  }),
);

test('stats_file_and_final_counters_are_written', async () => {
  const lab = await createLab({ settings: { delayMs: 1 } });
  let pid;
  try {
    pid = lab.ready.pid;
    assert.equal(lab.ready.sched, realtimeAvailable() ? 'fifo' : 'other');
    await udpStream(lab, { count: 100, pps: 1000, lingerMs: 100 });
    // The file is rewritten before the answer on stdout: read at once, it is never missing or behind.
    for (let i = 0; i < 50; i++) {
      const live = await lab.stats();
      const file = JSON.parse(readFileSync(lab.statsFile, 'utf8'));
      assert.equal(file.seq, live.seq, 'SIGUSR1 rewrote the file');
      assert.equal(file.a_to_b.delivered, 100);
    }
  } finally {
    await lab.close();
  }
  assert.equal(lab.finalStats.final, true);
  assert.equal(lab.finalStats.a_to_b.delivered, 100);
  assert.throws(() => process.kill(pid, 0), /ESRCH/, 'emulator gone');
});

/** Namespaces whose names contain `id`. */
const listedNamespaces = (id) =>
  runSync('ip', ['netns', 'list'])
    .stdout.split('\n')
    .filter((l) => l.includes(id));

test('exit_hooks_clean_up_after_exit_and_sigterm', async () => {
  for (const how of ['exit', 'SIGTERM']) {
    const script = `
      import { createLab } from ${JSON.stringify(join(HERE, 'lab.mjs'))};
      const lab = await createLab({ settings: { delayMs: 1 } });
      console.log(JSON.stringify({ id: lab.id, pid: lab.ready.pid }));
      ${how === 'exit' ? 'process.exit(0);' : 'setTimeout(() => {}, 30000);'}`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let timer;
    const info = await new Promise((resolve, reject) => {
      child.stdout.once('data', (d) => resolve(JSON.parse(d)));
      child.once('exit', (c) => reject(new Error(`child exited ${c} early`)));
      timer = setTimeout(() => reject(new Error('child did not start a lab')), 15_000);
    }).finally(() => clearTimeout(timer));
    if (how === 'SIGTERM') child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
    const end = Date.now() + 5000;
    while (Date.now() < end && (listedNamespaces(info.id).length || alive(info.pid))) await sleep(100);
    assert.deepEqual(listedNamespaces(info.id), [], `${how}: namespaces left`);
    assert.equal(alive(info.pid), false, `${how}: emulator left`);
    note('cleanup', `after ${how}`, 'nothing left', 'nothing left');
  }
});

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- runner

function labPrerequisite() {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync('/dev/net/tun')) return 'no /dev/net/tun';
  if (runSync('ip', ['-V']).status !== 0) return 'no iproute2';
  return null;
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`suite exceeded ${SUITE_TIMEOUT_MS / 1000} s; exiting (exit hooks clean up)`);
    process.exit(1);
  }, SUITE_TIMEOUT_MS);
  const t0 = performance.now();
  const counts = { passed: 0, failed: 0, skipped: 0 };

  console.log('building the emulator (cargo build --release)');
  const manifest = join(HERE, 'Cargo.toml');
  const build = runSync('cargo', ['build', '--release', '--quiet', '--manifest-path', manifest]);
  if (build.status !== 0) {
    console.error(build.stderr);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
  const unit = runSync('cargo', ['test', '--release', '--quiet', '--manifest-path', manifest]);
  const ok = unit.status === 0;
  console.log(`${ok ? 'ok  ' : 'FAIL'} rust_unit_tests ${unit.stdout.match(/test result: .*/)?.[0] ?? ''}`);
  if (!ok) console.log(unit.stdout + unit.stderr);
  counts[ok ? 'passed' : 'failed']++;

  const missing = labPrerequisite();
  console.log(`realtime (chrt -f 20): ${realtimeAvailable() ? 'yes' : 'no'}`);
  for (const t of tests) {
    if (t.needsLab && missing) {
      console.log(`skip ${t.name} (${missing})`);
      counts.skipped++;
      continue;
    }
    const start = performance.now();
    let timer;
    try {
      await Promise.race([
        t.fn(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${TEST_TIMEOUT_MS / 1000} s`)), TEST_TIMEOUT_MS);
        }),
      ]);
      counts.passed++;
      console.log(`ok   ${t.name} (${((performance.now() - start) / 1000).toFixed(1)} s)`);
    } catch (e) {
      counts.failed++;
      console.log(`FAIL ${t.name} (${((performance.now() - start) / 1000).toFixed(1)} s)\n     ${e.stack ?? e}`);
    } finally {
      clearTimeout(timer);
    }
  }

  console.log('\nmeasured vs set:');
  for (const f of figures) console.log(`  ${f.test.padEnd(12)} ${f.what.padEnd(44)} set ${String(f.setting).padEnd(16)} got ${f.measured}`);
  console.log(`\nsuite took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  clearTimeout(watchdog);
  console.log(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  process.exitCode = counts.failed ? 1 : 0;
}

main();
