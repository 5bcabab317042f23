// What the run loop needs from a network: datagrams out, datagrams in.
import type { RelayClose } from './errors.js';

export interface Transport {
  /** Largest datagram the transport carries (bytes). */
  readonly maxDatagramSize: number;
  /** Human-readable kind: 'loopback', 'websocket', 'webtransport', 'udp'. */
  readonly kind: string;
  /** Send one datagram. The transport must copy or consume it before returning. */
  send(datagram: Uint8Array): void;
  /** Register the receiver of incoming datagrams (one at a time). */
  onDatagram(handler: (datagram: Uint8Array) => void): void;
  /**
   * False while the transport is backed up (e.g. a WebSocket's send buffer is
   * full). The run loop then leaves messages in the core, where stale
   * unreliable-sequenced messages are superseded and expired ones dropped,
   * instead of building up latency in a socket buffer. Default: always true.
   */
  canSend?(): boolean;
  /** Called when `canSend` turns true again. */
  onWritable?(handler: () => void): void;
  /**
   * The connection judged this transport dead although it never closed
   * (nothing arrived for `silenceTimeoutMs`). A transport may remember this
   * (WebTransport does: `openTransport` then prefers WebSocket for a while).
   */
  markStalled?(reason: string): void;
  /** Register a handler for the transport closing underneath (`relay`: the relay's close code and name, if it sent one). */
  onClose(handler: (reason: string, relay?: RelayClose | null) => void): void;
  close(): void;
}
