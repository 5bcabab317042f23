export interface BrowserRow {
  key: string;
  browser: 'chromium' | 'firefox';
  transport: 'webtransport' | 'websocket';
  config: 'default' | 'low_latency';
  /** The native row a WebTransport row is held to; null for WebSocket. */
  native: string | null;
  label: string;
  /** WebTransportOptions.burst, where the row sets it. */
  burst?: number;
  /** ConnectionOptions.fec in place of LOW_LATENCY's, where the row sets it. */
  fec?: 'off' | 'balanced' | 'low-latency' | 'thrifty';
  /** ConnectionOptions.fecBudget, where the row sets it. */
  fecBudget?: number;
  /** Firefox: keep performance.now()'s default 1 ms rounding. */
  coarseClock?: boolean;
}
export const FIREFOX_MEASURE_PREFS: Record<string, boolean>;
export const LOW_LATENCY: { maxAckDelayMs: number; keepaliveMs: number; fec: 'low-latency'; latencyTargetMs: number };
export const BROWSER_ROWS: BrowserRow[];
export const DEFAULT_BROWSER_ROWS: string[];
