// The minimal app made runnable against a development relay: WebTransport
// first (WebSocket fallback), one reliable channel, one message, and the
// echo reported on the page as JSON in #result ({ ok, kind, fallbackReason,
// echo } or { ok: false, error }). The same steps as
// sdk/test/fixtures/minimal-app (which the size budget measures), plus what
// a self-signed relay needs: its /cert-hash and a connect token.
// Query: ?relay=http://host:port&token=…[&force=websocket]
import { Connection, openTransport } from '@ricochet/sdk';

const show = (r) => (document.getElementById('result').textContent = JSON.stringify(r));

async function main() {
  const q = new URLSearchParams(location.search);
  const info = await (await fetch(`${q.get('relay')}/cert-hash`)).json();
  const token = `?token=${encodeURIComponent(q.get('token'))}`;
  const { transport, kind, fallbackReason } = await openTransport({
    webTransportUrl: info.webTransportUrl ? info.webTransportUrl + token : undefined,
    serverCertificateHashes: info.certHashes,
    webSocketUrl: info.webSocketUrl + token,
    force: q.get('force') ?? undefined,
  });
  const conn = new Connection(transport, { handshake: 'echo-app', channels: [{ kind: 'reliable-ordered', name: 'chat' }] });
  await conn.ready;
  const echo = new Promise((resolve) => conn.on('message', ({ data }) => resolve(new TextDecoder().decode(data))));
  conn.send('chat', new TextEncoder().encode('hello from the echo app'));
  show({ ok: true, kind, fallbackReason, echo: await echo });
  conn.close();
}

main().catch((e) => show({ ok: false, error: String(e?.message ?? e) }));
