// WebSocket clients (`ws`): the connect token rides in the URL query
// (`/ricochet?token=…`); each binary message is one datagram.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ClientLink } from './session.js';
import type { Relay } from './relay.js';

export class WsListener {
  readonly wss: WebSocketServer;

  constructor(
    private readonly relay: Relay,
    /** The socket now carries a session (it leaves the pending-connection caps). */
    private readonly onSession: (socket: Duplex) => void,
  ) {
    // maxPayload: an oversized frame closes that socket with 1009 before we see it.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: relay.options.maxDatagramBytes, perMessageDeflate: false });
  }

  /** Hand an HTTP upgrade to the WebSocket server, then admit the session. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, query: URLSearchParams): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, socket, query.get('token') ?? ''));
  }

  private accept(ws: WebSocket, socket: Duplex, token: string): void {
    // Before anything else: a bad frame (unmasked, RSV1, oversized) emits
    // 'error', and an unheard 'error' would end the process.
    ws.on('error', () => {});
    const queueLimit = this.relay.options.clientQueueBytes;
    const graceMs = this.relay.options.closeGraceMs;
    const link: ClientLink = {
      transport: 'websocket',
      send(datagrams) {
        let dropped = 0;
        // One write for the whole batch, not a syscall per datagram (the
        // relay's forwarding cost is mostly syscalls).
        socket.cork();
        for (const d of datagrams) {
          // A stalled socket must not build unbounded latency: drop past the bound.
          if (ws.bufferedAmount > queueLimit) dropped++;
          else ws.send(d, { binary: true });
        }
        socket.uncork();
        return dropped;
      },
      close(code, reason) {
        // The close frame tells the browser why; a peer that never answers
        // it loses the socket after the grace period (ws would wait 30 s).
        ws.close(code, reason);
        setTimeout(() => ws.terminate(), graceMs).unref();
      },
      abort() {
        ws.terminate();
      },
    };
    const session = this.relay.admit(token, link);
    if (!session) return;
    this.onSession(socket);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return session.close('RELAY_ERR_MALFORMED_DATAGRAM', 'text frame');
      session.fromClient(data);
    });
    // 1000/1001: the page closed the socket on purpose; anything else (1006) may come back to resume.
    ws.on('close', (code: number) => session.clientClosed(code === 1000 || code === 1001));
    ws.on('error', () => session.clientClosed());
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
