// What the socket transports (WebSocket, WebTransport, UDP) do alike: one
// receiver per event, a later registration replacing the earlier (as
// `Transport` says), and an end that happens once, whichever comes first:
// `close()` by the connection (not reported back), or the socket ending
// underneath (reported once, with the relay's close code if it sent one).
import type { RelayClose } from './errors.js';
import type { Transport } from './transport.js';

export abstract class TransportBase implements Transport {
  abstract readonly kind: string;
  abstract readonly maxDatagramSize: number;
  /** Ended (closed by us, or reported closed): nothing more is sent or reported. */
  protected closed = false;
  private datagramHandler_: ((d: Uint8Array) => void) | null = null;
  private closeHandler_: ((reason: string, relay?: RelayClose | null) => void) | null = null;
  private writableHandler_: (() => void) | null = null;

  abstract send(datagram: Uint8Array): void;
  abstract close(): void;

  onDatagram(handler: (d: Uint8Array) => void): void {
    this.datagramHandler_ = handler;
  }
  onClose(handler: (reason: string, relay?: RelayClose | null) => void): void {
    this.closeHandler_ = handler;
  }
  onWritable(handler: () => void): void {
    this.writableHandler_ = handler;
  }

  /** Hands an incoming datagram to the receiver. */
  protected deliver(d: Uint8Array): void {
    this.datagramHandler_?.(d);
  }

  /** Tells the run loop that `canSend` turned true again. */
  protected writable(): void {
    this.writableHandler_?.();
  }

  /** Marks the transport ended and releases its timers; subclasses with timers extend it. */
  protected stop(): void {
    this.closed = true;
  }

  /** The socket ended underneath: stop, then report why (once; nothing after `close()`). */
  protected finish(reason: string, relay: RelayClose | null = null): void {
    if (this.closed) return;
    this.stop();
    this.closeHandler_?.(reason, relay);
  }
}
