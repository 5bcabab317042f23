// Issue 4, "Playwright under loss": headless Chromium or Firefox in namespace A, relay +
// native echo server in namespace B, joined by ricochet-netem's emulated link
// (10 ms each way + up to 2 ms jitter, i.e. ~20-22 ms RTT) with no loss, 5 %
// iid loss (s1_5pct) and Gilbert-Elliott bursty loss (s1_bursty), over
// WebTransport and over forced WebSocket. Needs root (namespaces, TUN).
//
// Asserted per case: reliable channels complete and in order, exactly one
// receipt per message, the page's measured RTT and the SDK's min RTT near
// 20 ms, the emulator's counters showing loss near the setting, and the SDK's
// loss each way, unreliable delivery and lost receipts agreeing with the
// emulator's and the relay's counters. One JSON line per case is printed.
import { existsSync } from 'node:fs';
import { expect, test, type Browser } from '@playwright/test';
import { startNetemStack, type LabStats, type NetemStack } from '../netem-stack.js';
import { delta, runEcho, type Result } from '../netem-echo.js';
import { expectComplete } from '../echo-checks.js';

const CASES = [
  { name: 'clean', lab: { settings: { delayMs: 10, jitterMs: 2 } }, loss: 0 },
  { name: 's1_5pct', lab: { profile: 's1_5pct' }, loss: 0.05 },
  { name: 's1_bursty', lab: { profile: 's1_bursty' }, loss: 0.1 },
] as const;

// Smaller than browser-echo's defaults: a TCP stream under 10 % bursty loss is slow.
const LOAD = { pings: 200, reliablePerChannel: 1000, unreliable: 500 };
// RTT: 2 × 10 ms + jitter (uniform 0-2 ms each way) + relay and echo server.
const RTT_MIN_MS = 19;
const RTT_MAX_MS = 32;

const canRun = process.getuid?.() === 0 && existsSync('/dev/net/tun');

for (const c of CASES) {
  test.describe(`netem ${c.name}`, () => {
    test.describe.configure({ mode: 'serial' });
    test.skip(!canRun, 'needs root and /dev/net/tun (network namespaces + TUN devices)');

    let stack: NetemStack | undefined;
    let browser: Browser;
    let before: LabStats | undefined;

    test.beforeAll(async ({}, info) => {
      test.setTimeout(90_000);
      stack = await startNetemStack({ ...c.lab, seed: 1 });
      browser = await stack.launchBrowser(info.project.use.browserName === 'firefox' ? 'firefox' : 'chromium');
    });
    test.afterAll(async () => {
      await stack?.stop();
    });

    for (const transport of ['webtransport', 'websocket'] as const) {
      test(`${transport} under ${c.name}: reliable complete and in order, one receipt each, RTT ≈ 20 ms, link loss ≈ ${c.loss * 100} %`, async ({ browserName }) => {
        const s = stack!;
        before = await s.lab.stats();
        const relayBefore = await s.relayDatagrams(transport);
        const t0 = Date.now();
        const page = await browser.newPage();
        let res: { r: Result; sdk: Result | null };
        try {
          // WebTransport cases measure WebTransport under loss, so they force it: a
          // bursty handshake can take over 5 s (Chromium's QUIC handshake losing
          // its retransmissions too), and a fallback would measure WebSocket
          // (netem-resume.spec.ts tests the fallback at its default deadline).
          res = await runEcho(page, s, { ...LOAD, force: transport, ...(transport === 'webtransport' ? { deadlineMs: 15_000 } : {}) });
        } finally {
          await page.close();
        }
        const { r, sdk } = res;
        // Over TCP the last segments may still await a retransmission (an RTO
        // is ≥ 200 ms) when the page is done: wait until the relay has had
        // every datagram the SDK sent, or 3 s. Datagrams lost over QUIC never
        // come, so the wait is short there and only lets stragglers land.
        let relayAfter = await s.relayDatagrams(transport);
        for (const until = Date.now() + (transport === 'websocket' ? 3_000 : 300); Date.now() < until; ) {
          if (relayAfter.toBackend - relayBefore.toBackend >= (sdk!.packetsOut as number)) break;
          await new Promise((r) => setTimeout(r, 50));
          relayAfter = await s.relayDatagrams(transport);
        }
        const after = await s.lab.stats();
        const ab = delta(after.a_to_b, before.a_to_b);
        const ba = delta(after.b_to_a, before.b_to_a);
        const linkLoss = (ab.lost + ba.lost) / Math.max(1, ab.packets + ba.packets);
        const received = r.received as number[];
        const unreliableRatio = received[2] / (r.unreliableSent as number);
        const lossOut = sdk!.lossOut as number;
        const lossIn = sdk!.lossIn as number;
        // What really left the browser: datagrams the relay got vs the SDK's packets out.
        const arrivedAtRelay = relayAfter.toBackend - relayBefore.toBackend;
        const lostBeforeRelay = 1 - arrivedAtRelay / (sdk!.packetsOut as number);
        const lostReceiptRatio = (r.lost as number) / (r.unreliableSent as number);
        console.log(
          JSON.stringify({
            test: `netem-${c.name}-${transport}`,
            kind: r.kind,
            fallbackReason: r.fallbackReason,
            transportMs: r.transportMs,
            rttP50: r.rttP50,
            rttP99: r.rttP99,
            sdk,
            transportDrops: r.transportDrops,
            received,
            messages: r.messages,
            receipts: r.receipts,
            lostReceipts: r.lost,
            retransmissions: r.retransmissions,
            unreliableDelivery: Number(unreliableRatio.toFixed(4)),
            linkLossSetting: c.loss,
            linkLoss: Number(linkLoss.toFixed(4)),
            arrivedAtRelay,
            lostBeforeRelay: Number(lostBeforeRelay.toFixed(4)),
            a_to_b: ab,
            b_to_a: ba,
            seconds: (Date.now() - t0) / 1000,
          }),
        );
        expect(r.kind).toBe(transport);
        expectComplete(r);
        expect(r.rttP50 as number).toBeGreaterThanOrEqual(RTT_MIN_MS);
        expect(r.rttP50 as number).toBeLessThanOrEqual(RTT_MAX_MS);
        // The SDK's own RTT floor sees the emulated path.
        expect(sdk!.minRttMs as number).toBeGreaterThanOrEqual(RTT_MIN_MS);
        expect(sdk!.minRttMs as number).toBeLessThanOrEqual(RTT_MAX_MS);
        if (transport === 'webtransport') {
          // Datagrams: the SDK's loss each way agrees with what was really lost.
          // Inbound that is the link's B→A loss. Outbound it is the link's A→B
          // loss plus datagrams Chromium's QUIC stack drops itself when its
          // congestion controller holds them back too long (this workload
          // offers ~9 Mbit/s; Cubic at 5 % loss and 22 ms RTT carries less), so
          // it is checked against the datagrams that reached the relay.
          expect(Math.abs(lossIn - ba.lossRatio)).toBeLessThanOrEqual(0.03);
          // Outbound the SDK counts only its ack-eliciting packets declared
          // lost; the relay counts every datagram that arrived (ACK-only ones
          // too, which Chromium drops at a lower rate: they do not come in
          // tick bursts). So a rate-to-rate comparison is off by a varying
          // mix (0.035 measured once at 5 %); compare counts instead. Every
          // packet declared lost must be one that never reached the relay
          // (slack: a few spurious declarations, a packet late past the
          // threshold); the floor below is the link's own A→B loss.
          const packetsLost = sdk!.packetsLost as number;
          const elicitingOut = sdk!.elicitingPacketsOut as number;
          const missing = (sdk!.packetsOut as number) - arrivedAtRelay;
          expect(packetsLost).toBeLessThanOrEqual(missing + Math.ceil(0.01 * elicitingOut) + 3);
          expect(lossOut).toBeGreaterThanOrEqual(ab.lossRatio - 0.03);
          // Unreliable messages reported lost: none of them came back.
          expect(r.lost as number).toBeLessThanOrEqual((r.unreliableSent as number) - received[2]);
          if (browserName === 'firefox') {
            // Firefox's QUIC stack discards a fifth of the datagrams the page
            // hands it here (lostBeforeRelay ≈ 0.2; the SDK's pacing queue
            // drops none), mostly resends between ticks, and adaptive FEC
            // repairs inbound loss: packet-level rates do not predict what
            // happens to the unreliable echoes, in either direction (the
            // product model was 0.137 and 0.229 off in two CI runs, while
            // every other figure held; its discards ranged 0.2-0.5 of the
            // unreliable echoes across CI runs, clustering at the ticks where
            // they leave). What holds whatever Firefox discards: the SDK saw
            // the loss; it reports no echo lost that came back (above); and
            // the echoes missing but not reported lost are few, i.e. inbound
            // loss FEC did not repair (outbound losses are reported).
            if (c.loss > 0) expect(r.lost as number).toBeGreaterThan(0);
            const missingUnreported = (r.unreliableSent as number) - received[2] - (r.lost as number);
            // (0.004-0.092 measured with lossIn 0.058-0.063.)
            expect(missingUnreported / (r.unreliableSent as number)).toBeLessThanOrEqual(lossIn + 0.15);
            expect(unreliableRatio).toBeGreaterThan(0.25);
          } else {
            // An echoed unreliable message needs both trips. The product is a
            // rough model: Chromium's own drops cluster at the ticks where
            // unreliable messages leave, more so on a busy machine (0.088 off
            // measured once at 5 % with other benchmarks running), and bursts
            // concentrate loss on fewer packets.
            expect(Math.abs(unreliableRatio - (1 - lossOut) * (1 - lossIn))).toBeLessThanOrEqual(0.12);
            // The share reported lost follows the outbound loss (roughly: they
            // leave in bursts at each tick, where Chromium's own drops cluster
            // too; early resends, sent between ticks and dropped less, dilute
            // lossOut, so under bursty loss the shares part further: 0.113
            // measured once).
            expect(Math.abs(lostReceiptRatio - lossOut)).toBeLessThanOrEqual(c.loss >= 0.1 ? 0.15 : 0.1);
          }
        } else {
          // TCP hides the link's loss: the SDK must see none and report none.
          expect(lossOut).toBe(0);
          expect(lossIn).toBe(0);
          expect(r.lost).toBe(0);
          expect(Math.abs(arrivedAtRelay - (sdk!.packetsOut as number))).toBeLessThanOrEqual(2);
        }
        // The link's own counters: loss near the setting (per-packet, both directions).
        expect(ab.packets).toBeGreaterThan(200);
        expect(ba.packets).toBeGreaterThan(200);
        if (c.loss === 0) {
          expect(ab.lost + ba.lost).toBe(0);
          if (transport === 'webtransport' && browserName === 'firefox') {
            // Firefox's QUIC stack itself discards some datagrams the page
            // handed it, on a clean link too (measured 0.8-2.1 % of the SDK's
            // packets never reached the relay, the SDK's own pacing queue
            // dropping none): a few unreliable echoes go missing. Chromium
            // delivers every one here.
            const drops = r.transportDrops as { dropped: number; oversized: number };
            expect(drops.dropped + drops.oversized).toBe(0);
            expect(unreliableRatio).toBeGreaterThanOrEqual(0.95);
          } else {
            expect(unreliableRatio).toBe(1);
          }
        } else {
          expect(linkLoss).toBeGreaterThan(c.loss * 0.5);
          expect(linkLoss).toBeLessThan(c.loss * 1.6);
          if (transport === 'webtransport') {
            // Datagrams: unreliable echoes are lost on the way out or back.
            expect(unreliableRatio).toBeLessThan(1);
            expect(r.retransmissions as number).toBeGreaterThan(0);
          } else {
            // TCP retransmits underneath; only the SDK's own backpressure
            // (maxAgeMs, highWaterBytes) could drop an unreliable message.
            expect(unreliableRatio).toBeGreaterThanOrEqual(0.95);
          }
        }
      });
    }
  });
}
