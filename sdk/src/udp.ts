// UDP in Node, without importing node:dgram here (the package stays
// browser-safe): pass a socket from `dgram.createSocket('udp4')`.

import type { Peer, Server } from './server.js';
import type { Transport } from './transport.js';

/** The subset of node:dgram's Socket used here. */
export interface UdpSocketLike {
  send(msg: Uint8Array, port: number, address: string, callback?: (err: Error | null) => void): void;
  on(event: 'message', listener: (msg: Uint8Array, rinfo: { address: string; port: number }) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  close(): void;
}

/** Client side: datagrams to and from one server address. */
export class UdpTransport implements Transport {
  readonly kind = 'udp';
  readonly maxDatagramSize: number;
  private onData: ((d: Uint8Array) => void) | null = null;
  private onClosed: ((reason: string) => void) | null = null;
  private closed = false;

  constructor(
    private readonly socket: UdpSocketLike,
    private readonly host: string,
    private readonly port: number,
    maxDatagramSize = 1200,
  ) {
    this.maxDatagramSize = maxDatagramSize;
    socket.on('message', (msg, rinfo) => {
      // Only the server we talk to; anything else on this port is ignored.
      if (rinfo.port === port && rinfo.address === host) this.onData?.(msg);
    });
    socket.on('close', () => this.finish('udp socket closed'));
    socket.on('error', (e) => this.finish(`udp socket error: ${e.message}`));
  }

  send(datagram: Uint8Array): void {
    if (this.closed) return;
    try {
      this.socket.send(datagram.slice(), this.port, this.host);
    } catch (e) {
      this.finish(`udp send failed: ${(e as Error).message}`);
    }
  }
  onDatagram(handler: (d: Uint8Array) => void): void {
    this.onData = handler;
  }
  onClose(handler: (reason: string) => void): void {
    this.onClosed = handler;
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
  }
  private finish(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed?.(reason);
  }
}

/** Server side: serve every peer that sends to `socket` (replies go to its address). */
export function serveUdp(server: Server, socket: UdpSocketLike): void {
  const peers = new Map<string, Peer>();
  socket.on('message', (msg, rinfo) => {
    const key = `${rinfo.address}:${rinfo.port}`;
    let peer = peers.get(key);
    if (!peer) {
      if (peers.size > 65_536) peers.clear(); // bounded: the server re-learns live peers
      peer = {
        send: (d) => {
          try {
            socket.send(d.slice(), rinfo.port, rinfo.address);
          } catch {
            // Socket closed: the connection will time out like any lost peer.
          }
        },
      };
      peers.set(key, peer);
    }
    server.handleDatagram(msg, peer);
  });
}
