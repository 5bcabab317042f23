// The echo page's workload across the emulated link, shared by the netem specs.
import type { Page } from '@playwright/test';
import type { DirectionStats, NetemStack } from './netem-stack.js';

export type Result = Record<string, unknown>;

/** One direction's packets and losses between two stats snapshots. */
export function delta(after: DirectionStats, before: DirectionStats | undefined) {
  const packets = after.packets_in - (before?.packets_in ?? 0);
  const lost = after.lost - (before?.lost ?? 0);
  return { packets, lost, lossRatio: packets ? lost / packets : 0, delayP50Us: after.delay_us.p50, delayP99Us: after.delay_us.p99, lateP99Us: after.late_us.p99 };
}

/** Run the echo page's workload (pages/echo.js) once; also returns the SDK's last stats(). */
export async function runEcho(page: Page, stack: NetemStack, opts: Record<string, unknown>): Promise<{ r: Result; sdk: Result | null }> {
  await page.goto(stack.pageUrl);
  await page.waitForFunction(() => 'ricochetEcho' in window);
  // Keep the connection's last stats() (echo.js calls it just before close) for the report.
  await page.evaluate(async () => {
    const w = window as unknown as { __lastStats?: unknown };
    const m = (await import('/sdk/index.js' as string)) as { Connection: { prototype: { stats(): unknown } } };
    const orig = m.Connection.prototype.stats;
    m.Connection.prototype.stats = function (this: unknown) {
      const s = orig.call(this);
      w.__lastStats = s;
      return s;
    };
  });
  const r = await page.evaluate((o) => (window as unknown as { ricochetEcho: (o: unknown) => Promise<Result> }).ricochetEcho(o), {
    relayHttp: stack.relayHttp,
    token: stack.token(),
    ...opts,
  });
  const sdk = await page.evaluate(() => {
    const s = (window as unknown as { __lastStats?: Record<string, unknown> }).__lastStats;
    return s ? { rttMs: s.rttMs, minRttMs: s.minRttMs, lossOut: s.lossOut, lossIn: s.lossIn, packetsOut: s.packetsOut, packetsIn: s.packetsIn, packetsLost: s.packetsLost, elicitingPacketsOut: s.elicitingPacketsOut } : null;
  });
  return { r, sdk };
}

