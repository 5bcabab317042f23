// The arcade in real Chromium and Firefox: two browser contexts join one room through
// the relay (WebTransport, or WebSocket when forced) to the Rust game
// server, and each sees the other move and score. Also under the relay's
// simulated 5 % loss, and the network panel driving the relay live.
// Screenshots: results/e2e/arcade.png and results/e2e/arcade-5pct-loss.png.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { startArcade, type Arcade } from '../../demos/arcade/scripts/stack.mjs';
import { ROOT } from '../stack.js';

interface ViewPlayer {
  id: number;
  x: number;
  y: number;
  alive: boolean;
  name?: string;
  kills?: number;
}
interface View {
  connected: boolean;
  transport: string | null;
  me: number;
  snapshots: number;
  players: ViewPlayer[];
  roster: { id: number; name: string; kills: number; deaths: number }[];
  graphs: { rtt: number[] };
  stats: { lossIn: number; lossOut: number; fecRecovered: number; fecRepairPacketsOut: number } | null;
}

const view = (page: Page): Promise<View> => page.evaluate(() => (window as unknown as { arcade: { view(): View } }).arcade.view());

async function joinAs(browser: Browser, arcade: Arcade, name: string, room: number, force?: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 800 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log(`[${name}] page error: ${e.message}`));
  await page.goto(`${arcade.url}?room=${room}&name=${name}${force ? `&force=${force}` : ''}`);
  await expect.poll(async () => (await view(page)).connected, { timeout: 15_000 }).toBe(true);
  return page;
}

/** The players' contexts, closed before the arcade stops (else their pages keep reconnecting into the next test). */
const closeContexts = (browser: Browser) => Promise.all(browser.contexts().map((c) => c.close()));

/** Where a world point of the arena is on the page, for aiming with the mouse. */
async function screenPoint(page: Page, x: number, y: number): Promise<{ x: number; y: number }> {
  const r = await page.locator('#arena').boundingBox();
  if (!r) throw new Error('no arena canvas');
  return { x: r.x + (x / 1600) * r.width, y: r.y + (y / 900) * r.height };
}

const other = (v: View, id: number) => v.players.find((p) => p.id === id);

/** Both players in one room; bob moves (alice sees it), then alice shoots bob until both see her score. */
async function playTogether(alice: Page, bob: Page): Promise<void> {
  await expect.poll(async () => (await view(alice)).players.length, { timeout: 10_000 }).toBe(2);
  await expect.poll(async () => (await view(bob)).players.length, { timeout: 10_000 }).toBe(2);
  const bobId = (await view(bob)).me;
  const aliceId = (await view(alice)).me;

  // Bob walks left along the open middle row; Alice's view of him follows.
  const before = other(await view(alice), bobId)!;
  await bob.keyboard.down('a');
  await expect.poll(async () => other(await view(alice), bobId)!.x, { timeout: 10_000 }).toBeLessThan(before.x - 60);
  await bob.keyboard.up('a');
  // And Bob sees Alice move too.
  const aliceBefore = other(await view(bob), aliceId)!;
  await alice.keyboard.down('d');
  await expect.poll(async () => other(await view(bob), aliceId)!.x, { timeout: 10_000 }).toBeGreaterThan(aliceBefore.x + 40);
  await alice.keyboard.up('d');

  // Alice aims at Bob as she sees him and holds fire until the kill counts.
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const v = await view(alice);
    if ((v.roster.find((r) => r.id === aliceId)?.kills ?? 0) >= 1) break;
    const target = other(v, bobId);
    if (target?.alive) {
      const p = await screenPoint(alice, target.x, target.y);
      await alice.mouse.move(p.x, p.y);
      await alice.mouse.down();
    }
    await alice.waitForTimeout(100);
  }
  await alice.mouse.up();
  // The kill arrives on the reliable channel at both players.
  for (const page of [alice, bob]) {
    await expect.poll(async () => (await view(page)).roster.find((r) => r.id === aliceId)?.kills ?? 0, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    await expect.poll(async () => (await view(page)).roster.find((r) => r.id === bobId)?.deaths ?? 0, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
  }
}

test('two players in one room over WebTransport see each other move and score', async ({ browser }, testInfo) => {
  const arcade = await startArcade();
  try {
    const alice = await joinAs(browser, arcade, 'alice', 3);
    const bob = await joinAs(browser, arcade, 'bob', 3);
    expect((await view(alice)).transport).toBe('webtransport');
    expect((await view(bob)).transport).toBe('webtransport');
    await playTogether(alice, bob);
    const shot = join(ROOT, 'results', 'e2e', 'arcade.png');
    await alice.screenshot({ path: shot });
    await testInfo.attach('arcade', { path: shot, contentType: 'image/png' });
  } finally {
    await closeContexts(browser);
    await arcade.stop();
  }
});

test('under the relay’s 5 % loss, a WebTransport and a WebSocket player still see each other move and score', async ({ browser }, testInfo) => {
  const arcade = await startArcade({ impairment: 's1_5pct' });
  try {
    const alice = await joinAs(browser, arcade, 'alice', 7);
    const bob = await joinAs(browser, arcade, 'bob', 7, 'websocket');
    expect((await view(alice)).transport).toBe('webtransport');
    expect((await view(bob)).transport).toBe('websocket');
    await playTogether(alice, bob);
    const report = arcade.relay.impairmentReport() as { impairment: unknown };
    expect(report.impairment).toBe('s1_5pct');
    // The panel shows the link the relay simulates, and the loss it causes.
    await expect(alice.locator('#profile')).toHaveValue('s1_5pct');
    await expect.poll(async () => ((await view(alice)).stats?.lossIn ?? 0) + ((await view(alice)).stats?.lossOut ?? 0), { timeout: 10_000 }).toBeGreaterThan(0);
    const shot = join(ROOT, 'results', 'e2e', 'arcade-5pct-loss.png');
    await alice.screenshot({ path: shot });
    await testInfo.attach('arcade-5pct-loss', { path: shot, contentType: 'image/png' });
  } finally {
    await closeContexts(browser);
    await arcade.stop();
  }
});

test('the network panel sets the relay’s link profile live, the RTT and FEC graphs show it, and force WebSocket moves the session over', async ({ browser }) => {
  const arcade = await startArcade();
  try {
    const page = await joinAs(browser, arcade, 'carol', 1);
    await page.selectOption('#fec', 'low-latency');
    await page.selectOption('#profile', 's1_5pct');
    await expect.poll(() => (arcade.relay.impairmentReport() as { impairment: unknown }).impairment, { timeout: 5_000 }).toBe('s1_5pct');
    // s1_5pct is 10 ms each way: the measured RTT climbs to about 20 ms.
    await expect.poll(async () => (await view(page)).graphs.rtt[0] ?? 0, { timeout: 15_000 }).toBeGreaterThan(15);
    // The server repairs its snapshots once this browser reports loss, and
    // this browser (low-latency FEC) repairs its inputs once the server does.
    await expect.poll(async () => (await view(page)).stats?.fecRecovered ?? 0, { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(async () => (await view(page)).stats?.fecRepairPacketsOut ?? 0, { timeout: 15_000 }).toBeGreaterThan(0);
    await page.selectOption('#profile', '');
    await expect.poll(() => (arcade.relay.impairmentReport() as { impairment: unknown }).impairment ?? null, { timeout: 5_000 }).toBeNull();
    // "force WebSocket" moves the live session: same player, no rejoin.
    const before = await view(page);
    expect(before.transport).toBe('webtransport');
    await page.check('#force-ws');
    await expect.poll(async () => ((v) => v.connected && v.transport)(await view(page)), { timeout: 15_000 }).toBe('websocket');
    await expect(page.locator('#transport')).toHaveAttribute('data-kind', 'websocket');
    expect((await view(page)).me).toBe(before.me);
    const snapshots = (await view(page)).snapshots;
    await expect.poll(async () => (await view(page)).snapshots, { timeout: 5_000 }).toBeGreaterThan(snapshots + 10);
  } finally {
    await closeContexts(browser);
    await arcade.stop();
  }
});

test('Node bots join through the relay over WebSocket and a browser player sees them move', async ({ browser }) => {
  const arcade = await startArcade();
  const bots = spawn(process.execPath, [join(ROOT, 'demos', 'arcade', 'dist', 'node-bots.mjs'), '--url', arcade.url.replace(/\/$/, ''), '--room', '5', '--bots', '3', '--seconds', '20'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const page = await joinAs(browser, arcade, 'dana', 5);
    await expect.poll(async () => (await view(page)).players.length, { timeout: 15_000 }).toBe(4);
    const bot = (await view(page)).players.find((p) => p.name?.startsWith('node-bot-'))!;
    // Bots wander: within a few seconds each has moved on the page.
    await expect
      .poll(async () => {
        const now = other(await view(page), bot.id);
        return now ? Math.hypot(now.x - bot.x, now.y - bot.y) : 0;
      }, { timeout: 15_000 })
      .toBeGreaterThan(20);
  } finally {
    bots.kill('SIGTERM');
    await closeContexts(browser);
    await arcade.stop();
  }
});
