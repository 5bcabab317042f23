// Test page for specs/webtransport-close-codes.spec.ts: what a page learns when
// the relay ends its WebTransport session with a close code. Three views:
// the browser's own WebTransport.closed, the SDK transport's onClose relay
// info, and a Connection's rejected `ready`.
import { Connection, WebTransportTransport } from '/sdk/index.js';
import { relayInfo } from './relay-info.js';

const log = (s) => (document.getElementById('log').textContent += `\n${s}`);
const hashes = (info) => info.certHashes.map((h) => ({ algorithm: 'sha-256', value: Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16)) }));

/** A Ricochet DATA datagram for connection `id` (type 4, id LE): a resume, as far as the relay can tell. */
function dataPacket(id) {
  const b = new Uint8Array(32);
  b[0] = 4;
  new DataView(b.buffer).setUint32(1, id, true);
  return b;
}

/**
 * Raw WebTransport: open a session with `token`, optionally send a DATA
 * datagram (a take-over the game server will not answer: 4410), and report how
 * `closed` settled.
 */
window.rawClose = async ({ relayHttp, token, sendData }) => {
  const info = await relayInfo(relayHttp);
  const wt = new WebTransport(`${info.webTransportUrl}?token=${encodeURIComponent(token)}`, { serverCertificateHashes: hashes(info) });
  await wt.ready;
  // The relay's close notice: the first incoming unidirectional stream, read whole.
  const notice = (async () => {
    const { value } = await wt.incomingUnidirectionalStreams.getReader().read();
    const bytes = [];
    for await (const chunk of value) bytes.push(...chunk);
    return bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
  })().catch((e) => `error: ${e}`);
  if (sendData) {
    const w = wt.datagrams.writable.getWriter();
    await w.write(dataPacket(0x5eed));
    w.releaseLock();
  }
  const t0 = performance.now();
  const closed = await wt.closed.then(
    (c) => ({ resolved: true, closeCode: c.closeCode, reason: c.reason }),
    (e) => ({ resolved: false, error: String(e?.message ?? e) }),
  );
  log(`closed ${JSON.stringify(closed)}`);
  return { ...closed, ms: performance.now() - t0, notice: await notice };
};

/** The SDK's WebTransport transport: the relay info its onClose reports. */
window.sdkTransportClose = async ({ relayHttp, token, sendData }) => {
  const info = await relayInfo(relayHttp);
  const t = await WebTransportTransport.connect(`${info.webTransportUrl}?token=${encodeURIComponent(token)}`, { serverCertificateHashes: info.certHashes });
  const closed = new Promise((resolve) => t.onClose((reason, relay) => resolve({ reason, relay: relay ?? null })));
  if (sendData) t.send(dataPacket(0x5eee));
  return closed;
};

/** A Connection over WebTransport only: how its `ready` is rejected. */
window.connectionRefusal = async ({ relayHttp, token }) => {
  const info = await relayInfo(relayHttp);
  const t = await WebTransportTransport.connect(`${info.webTransportUrl}?token=${encodeURIComponent(token)}`, { serverCertificateHashes: info.certHashes });
  const conn = new Connection(t, { channels: ['reliable-ordered'], handshake: 'e2e' });
  try {
    await conn.ready;
    conn.close();
    return { ready: true };
  } catch (e) {
    return { ready: false, code: e.code, reason: e.reason ?? null, relay: e.relay ?? null, message: e.message };
  }
};

/**
 * A live Connection over WebTransport; resolves once it is ready with a
 * promise-holder: `window.liveClose` settles with what the transport's
 * onClose reported when the relay ends the session (the spec drains the relay).
 */
window.openLive = async ({ relayHttp, token }) => {
  const info = await relayInfo(relayHttp);
  const t = await WebTransportTransport.connect(`${info.webTransportUrl}?token=${encodeURIComponent(token)}`, { serverCertificateHashes: info.certHashes });
  const onClose = t.onClose.bind(t);
  window.liveClose = new Promise((resolve) => {
    // Seen first here, then handed on to the Connection's own handler.
    t.onClose = (h) => onClose((reason, relay) => {
      resolve({ reason, relay: relay ?? null });
      h(reason, relay);
    });
  });
  const conn = new Connection(t, { channels: ['reliable-ordered'], handshake: 'e2e' });
  conn.on('error', () => {});
  await conn.ready;
  return true;
};
