// Players for the relay-fleet specs (e2e/fleet/), shared by the Chromium page
// (pages/fleet.js) and the Node bots (fleet/bots.mjs). Each session sends one
// reliable-ordered message every 1000/rateHz ms carrying a sequence number;
// the native echo server returns it on the same channel, and the session
// checks the echoes arrive each exactly once, in order. It also records, with
// wall-clock times (Date.now(): the harness, the bots and the page share the
// machine's clock), every `reconnecting`, `resumed`, the first delivery after
// each `reconnecting`, and the close event. Nothing here imports the SDK: the
// caller passes `Connection` and `open(token, resuming)` (a new transport for a token).

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * @param {{ Connection: any, open: (token: string, resuming?: boolean) => Promise<any>, tokens: string[], rateHz?: number,
 *   connOptions?: Record<string, unknown>, concurrency?: number, label?: string }} o
 */
export function createPlayers(o) {
  const rateHz = o.rateHz ?? 10;
  const sessions = o.tokens.map((token, i) => ({
    i,
    label: `${o.label ?? 's'}${i}`,
    token,
    conn: null,
    kind: null,
    openedAt: null,
    openError: null,
    sent: 0,
    recv: 0,
    expect: 0,
    reordered: 0,
    duplicates: 0,
    awaitingFirst: false,
    events: [],
    close: null,
    timer: null,
  }));
  let sending = true;

  const openOne = async (s) => {
    const first = await o.open(s.token);
    s.kind = first.kind;
    const conn = new o.Connection(first.transport, {
      channels: ['reliable-ordered'],
      handshake: 'fleet',
      reconnect: async () => (await o.open(s.token, true)).transport,
      ...o.connOptions,
    });
    s.conn = conn;
    conn.on('reconnecting', (e) => {
      s.events.push({ type: 'reconnecting', at: Date.now(), reason: String(e.reason).slice(0, 160) });
      s.awaitingFirst = true;
    });
    conn.on('resumed', (e) => s.events.push({ type: 'resumed', at: Date.now(), downtimeMs: Math.round(e.downtimeMs), attempts: e.attempts, transport: e.transport }));
    conn.on('close', (e) => {
      s.close = { at: Date.now(), kind: e.kind, code: e.code, closeCode: e.closeCode, reason: String(e.reason).slice(0, 200) };
      clearInterval(s.timer);
    });
    conn.on('message', ({ data }) => {
      const seq = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0, true);
      s.recv++;
      if (s.awaitingFirst) {
        s.awaitingFirst = false;
        s.events.push({ type: 'delivered', at: Date.now() });
      }
      if (seq === s.expect) s.expect++;
      else if (seq < s.expect) s.duplicates++;
      else {
        s.reordered++;
        s.expect = seq + 1;
      }
    });
    await conn.ready;
    s.openedAt = Date.now();
    s.timer = setInterval(() => {
      if (!sending || s.close) return;
      const b = new Uint8Array(32);
      new DataView(b.buffer).setUint32(0, s.sent, true);
      try {
        conn.send(0, b);
        s.sent++;
      } catch {
        // closed meanwhile: the close event says why
      }
    }, 1000 / rateHz);
  };

  return {
    /** Open every session, `concurrency` at a time; resolves when all are open (or failed to). */
    async open() {
      let next = 0;
      const worker = async () => {
        while (next < sessions.length) {
          const s = sessions[next++];
          try {
            await openOne(s);
          } catch (e) {
            s.openError = String(e?.message ?? e).slice(0, 200);
          }
        }
      };
      await Promise.all(Array.from({ length: o.concurrency ?? 10 }, worker));
      return { opened: sessions.filter((s) => s.openedAt !== null).length, failed: sessions.filter((s) => s.openError).map((s) => s.openError) };
    },
    stopSending() {
      sending = false;
    },
    /** Wait (up to `ms`) until every live session got back everything it sent. */
    async drain(ms = 10_000) {
      const end = Date.now() + ms;
      while (Date.now() < end && sessions.some((s) => !s.close && s.openedAt !== null && s.recv < s.sent)) await sleep(50);
    },
    closeAll() {
      for (const s of sessions) {
        clearInterval(s.timer);
        try {
          s.conn?.close(1000, 'done');
        } catch {
          // already closed
        }
      }
    },
    report() {
      return sessions.map((s) => ({
        label: s.label,
        kind: s.kind,
        state: s.conn?.state ?? null,
        openedAt: s.openedAt,
        openError: s.openError,
        sent: s.sent,
        recv: s.recv,
        reordered: s.reordered,
        duplicates: s.duplicates,
        events: s.events,
        close: s.close,
      }));
    },
  };
}
