// UDP in Node, without importing node:dgram here (the package stays
// browser-safe): pass a socket from `dgram.createSocket('udp4')`.

import type { Peer, Server } from './server.js';
import { TransportBase } from './transport-base.js';

/** The subset of node:dgram's Socket used here. */
export interface UdpSocketLike {
  send(msg: Uint8Array, port: number, address: string, callback?: (err: Error | null) => void): void;
  on(event: 'message', listener: (msg: Uint8Array, rinfo: { address: string; port: number }) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  close(): void;
}

/** Client side: datagrams to and from one server address. */
export class UdpTransport extends TransportBase {
  readonly kind = 'udp';
  readonly maxDatagramSize: number;

  constructor(
    private readonly socket: UdpSocketLike,
    private readonly host: string,
    private readonly port: number,
    maxDatagramSize = 1200,
  ) {
    super();
    this.maxDatagramSize = maxDatagramSize;
    socket.on('message', (msg, rinfo) => {
      // Only the server we talk to; anything else on this port is ignored.
      if (rinfo.port === port && rinfo.address === host) this.deliver(msg);
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
  close(): void {
    if (this.closed) return;
    this.stop();
    this.socket.close();
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
