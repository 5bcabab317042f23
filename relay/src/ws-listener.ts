// WebSocket clients (`ws`): the connect token rides in the URL query
// (`/ricochet?token=…`); each binary message is one datagram.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ClientLink } from './session.js';
import type { Relay } from './relay.js';

export class WsListener {
  readonly wss: WebSocketServer;

  constructor(private readonly relay: Relay) {
    // maxPayload: an oversized frame closes that socket with 1009 before we see it.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: relay.options.maxDatagramBytes, perMessageDeflate: false });
  }

  /** Hand an HTTP upgrade to the WebSocket server, then admit the session. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, req, socket));
  }

  private accept(ws: WebSocket, req: IncomingMessage, socket: Duplex): void {
    const url = new URL(req.url ?? '/', 'http://relay');
    const queueLimit = this.relay.options.clientQueueBytes;
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
        ws.close(code, reason);
      },
      abort() {
        ws.terminate();
      },
    };
    const session = this.relay.admit(url.searchParams.get('token') ?? '', link);
    if (!session) return;
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
