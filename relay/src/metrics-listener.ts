// The separate /metrics listener: one request per connection, read by hand.
// Node's HTTP parser answers every request pipelined into a connection, so
// a scraper-turned-attacker writing GETs without reading made the relay
// parse and answer thousands per read; here anything after the first
// request head is never looked at, and the connection closes after one
// answer, as Prometheus expects anyway.
import { createServer, type Server, type Socket } from 'node:net';
import { closingResponse, endThenDestroy, listen } from './http-guard.js';

export interface MetricsListenerOptions {
  host: string;
  port: number;
  /** Largest request head, bytes. */
  maxHeaderBytes: number;
  /** A request head must arrive within this long, ms. */
  headTimeoutMs: number;
  /** Refuse this connection before reading it (per-address budgets). */
  refuse: (socket: Socket) => boolean;
  /** The exposition text and its content type. */
  render: () => Promise<{ contentType: string; text: string }>;
  /** /healthz: status code and JSON body. */
  health: () => { status: number; body: unknown };
}

export interface MetricsListener {
  readonly server: Server;
  /** Stop listening and cut every open connection. */
  close(): Promise<void>;
}

export async function startMetricsListener(o: MetricsListenerOptions): Promise<MetricsListener> {
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    if (o.refuse(socket)) return void socket.destroy();
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setTimeout(o.headTimeoutMs, () => socket.destroy());
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > o.maxHeaderBytes) answer(socket, 431, 'text/plain', '');
        return;
      }
      socket.off('data', onData);
      socket.pause(); // nothing after the first head is read
      const [method, target] = head.slice(0, head.indexOf('\r\n')).split(' ');
      if (method !== 'GET') return answer(socket, 405, 'text/plain', '');
      if (target === '/healthz') {
        const h = o.health();
        return answer(socket, h.status, 'application/json', JSON.stringify(h.body));
      }
      if (target !== '/metrics') return answer(socket, 404, 'text/plain', '');
      o.render().then(
        (m) => answer(socket, 200, m.contentType, m.text),
        () => answer(socket, 500, 'text/plain', ''),
      );
    };
    socket.on('data', onData);
  });
  await listen(server, o.port, o.host);
  return {
    server,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  };
}

function answer(socket: Socket, status: number, contentType: string, body: string): void {
  if (!socket.destroyed) endThenDestroy(socket, closingResponse(status, body, contentType));
}
