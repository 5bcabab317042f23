// The one-page example of @ricochet/relay/playwright a game team copies: its
// server behind a test relay, a simulated network per test, changed live,
// and every player's transport cut at once. (The page and SDK come from this
// repository's static server; a game serves its own.)
import { expect, test } from '../fixtures.js';
import { startStack, type Stack } from '../stack.js';

test.use({ profile: 'wifi' });

let web: Stack;
test.beforeAll(async () => {
  web = await startStack();
});
test.afterAll(async () => web?.stop());

test('a player keeps every reliable message through a live network change and a cut transport', async ({ page, relay }) => {
  await page.goto(web.pageUrl);
  await page.evaluate(async (o) => {
    const { connectRelay } = await import('/sdk/index.js' as string);
    const conn = await connectRelay(o.relayUrl, o.token, { webTransportPort: Number(o.webTransportPort) });
    const w = window as unknown as { got: number[]; sent: number; kind: string; resumed: number; pump: number };
    w.got = [];
    w.sent = 0;
    w.resumed = 0;
    w.kind = conn.transport.kind;
    conn.on('message', (m: { data: Uint8Array }) => w.got.push(new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true)));
    conn.on('resumed', () => w.resumed++);
    w.pump = window.setInterval(() => {
      const b = new Uint8Array(64);
      new DataView(b.buffer).setUint32(0, w.sent++, true);
      conn.send(0, b);
    }, 10);
  }, relay.connect('alice'));
  const state = () =>
    page.evaluate(() => {
      const w = window as unknown as { got: number[]; sent: number; kind: string; resumed: number };
      return { got: w.got, sent: w.sent, kind: w.kind, resumed: w.resumed };
    });
  await expect.poll(async () => (await state()).got.length, { timeout: 10_000 }).toBeGreaterThan(50);
  relay.setImpairment('mobile_lossy'); // live, for every session
  await page.waitForTimeout(500);
  expect(relay.killTransports()).toBe(1); // every player's transport dies at once
  await expect.poll(async () => (await state()).resumed, { timeout: 10_000 }).toBe(1);
  relay.setImpairment(null);
  await page.evaluate(() => clearInterval((window as unknown as { pump: number }).pump));
  await expect
    .poll(async () => {
      const s = await state();
      return s.got.length === s.sent;
    }, { timeout: 15_000 })
    .toBe(true);
  const s = await state();
  expect(s.kind).toBe('webtransport');
  expect(s.got).toEqual([...Array(s.sent).keys()]);
});
