// S1's browser rows (bench/s1-browser.mjs runs them, e2e/bench-specs/ measures
// them): which browser, which transport, which connection configuration. The
// `low_latency` rows state what the native `ricochet_ll` row does (s1_peer
// --preset low_latency --latency-target-ms 15, i.e. the core's
// Config::low_latency(): 1 ms ack delay, 250 ms keepalive, the low-latency FEC
// preset, and a 15 ms target on the message channel) through the SDK's
// ConnectionOptions, as a game would. `native` names the native row a
// WebTransport row is held to (issue 16: within 1.5 ms at p50 and p99, bytes
// ± 10 %).
//
// Firefox rounds performance.now() to 1 ms by default (privacy.reduceTimerPrecision),
// which would put ±1 ms on each message's send stamp and on the page clock's
// offset, against a 1.5 ms goal: the Firefox rows turn the rounding off
// (FIREFOX_MEASURE_PREFS) unless `coarseClock` keeps it, to see whether the
// SDK itself behaves differently on the coarse clock.

/**
 * Firefox preferences for measuring: performance.now() at full resolution; with
 * RICOCHET_FIREFOX_QLOG=1, a qlog of each session too (bench/firefox-qlog.mjs reads it).
 */
export const FIREFOX_MEASURE_PREFS = {
  'privacy.reduceTimerPrecision': false,
  ...(process.env.RICOCHET_FIREFOX_QLOG === '1' ? { 'network.http.http3.enable_qlog': true } : {}),
};

/** ConnectionOptions that match the core's Config::low_latency() plus a 15 ms channel target. */
export const LOW_LATENCY = { maxAckDelayMs: 1, keepaliveMs: 250, fec: 'low-latency', latencyTargetMs: 15 };

const LL = 'low_latency config, 15 ms channel target';
const row = (browser, transport, config, extra = {}) => {
  const b = browser === 'firefox' ? 'Firefox ESR' : 'Chromium';
  const t = transport === 'webtransport' ? 'WebTransport' : 'WebSocket';
  const c = config === 'low_latency' ? LL : 'default config';
  const key = `${browser}_${transport === 'webtransport' ? 'wt' : 'ws'}${config === 'low_latency' ? '_ll' : ''}${extra.burst ? `_burst${extra.burst}` : ''}${extra.fec ? `_fec_${extra.fec}` : ''}${extra.fecBudget ? `_budget${extra.fecBudget}` : ''}${extra.coarseClock ? '_coarse_clock' : ''}`;
  const native = transport === 'webtransport' ? (config === 'low_latency' ? 'ricochet_ll' : 'ricochet') : null;
  return { key, browser, transport, config, native, label: `Ricochet (${b}, ${t} via relay, ${c}${extra.burst ? `, pacing burst ${extra.burst}` : ''}${extra.fec ? `, FEC ${extra.fec}` : ''}${extra.fecBudget ? `, FEC budget ${extra.fecBudget}` : ''}${extra.coarseClock ? ", Firefox's 1 ms clock" : ''})`, ...extra };
};

/** Every row the spec knows; the default set first. */
export const BROWSER_ROWS = [
  row('chromium', 'webtransport', 'default'),
  row('chromium', 'webtransport', 'low_latency'),
  row('chromium', 'websocket', 'low_latency'),
  row('firefox', 'webtransport', 'default'),
  row('firefox', 'webtransport', 'low_latency'),
  row('firefox', 'websocket', 'low_latency'),
  // Experiments (--browser-rows): the SDK's WebTransport pacing burst (default 32) made small.
  row('firefox', 'webtransport', 'low_latency', { burst: 4 }),
  row('firefox', 'webtransport', 'default', { burst: 4 }),
  row('chromium', 'webtransport', 'low_latency', { burst: 4 }),
  row('firefox', 'webtransport', 'low_latency', { burst: 1 }),
  // Firefox's QUIC window (bench/reference/s1-browsers.md): the latency target with the default FEC
  // preset, and with 200 % and 100 % budgets (the low-latency preset's own is 250 %; the SDK caps it at 60 % there).
  row('firefox', 'webtransport', 'low_latency', { fec: 'balanced' }),
  row('firefox', 'webtransport', 'low_latency', { fecBudget: 2 }),
  row('firefox', 'webtransport', 'low_latency', { fecBudget: 1 }),
  row('chromium', 'webtransport', 'low_latency', { fecBudget: 0.6 }),
  // Firefox as shipped: performance.now() in 1 ms steps (the other Firefox rows turn that off to measure).
  row('firefox', 'webtransport', 'low_latency', { coarseClock: true }),
];

export const DEFAULT_BROWSER_ROWS = BROWSER_ROWS.slice(0, 6).map((r) => r.key);
