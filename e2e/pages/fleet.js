// Relay-fleet players in Chromium (e2e/fleet/): WebTransport sessions through
// the UDP balancer's virtual address (or WebSocket through HAProxy), driven
// by Playwright via window.ricochetFleet. See fleet-session.js.
import { Connection, openTransport } from '/sdk/index.js';
import { createPlayers } from './fleet-session.js';

let players = null;

window.ricochetFleet = {
  /**
   * o: { tokens, kind: 'webtransport' | 'websocket', webTransportUrl, webSocketUrl, certHashes,
   *      rateHz, connOptions, concurrency, reconnectDeadlineMs }
   */
  async start(o) {
    const open = async (token, resuming) => {
      const q = `?token=${encodeURIComponent(token)}`;
      const c = await openTransport({
        force: o.kind,
        // A resume may first reach a relay the UDP balancer has not yet taken out of rotation: a
        // short handshake deadline makes that attempt cheap (the SDK's default is 1500 ms).
        ...(resuming && o.reconnectDeadlineMs ? { deadlineMs: o.reconnectDeadlineMs } : {}),
        webTransportUrl: o.webTransportUrl + q,
        serverCertificateHashes: o.certHashes,
        webSocketUrl: o.webSocketUrl + q,
      });
      return { kind: c.kind, transport: c.transport };
    };
    players = createPlayers({ Connection, open, tokens: o.tokens, rateHz: o.rateHz, connOptions: o.connOptions, concurrency: o.concurrency, label: o.label });
    const r = await players.open();
    document.getElementById('log').textContent = `opened ${r.opened}`;
    return r;
  },
  report: () => players.report(),
  stopSending: () => players.stopSending(),
  drain: (ms) => players.drain(ms),
  closeAll: () => players.closeAll(),
};
document.getElementById('log').textContent = 'ready';
