// Constants shared by Connection and Server (views into wasm memory: heap.ts).

/** Event kinds from `pollEvent` (see wasm/wasm/src/events.rs). */
export const EV = { NONE: 0, CONNECTED: 1, MESSAGE: 2, ACKED: 3, LOST: 4, CLOSED: 5, CONNECT_REQUEST: 6 } as const;

export type CloseKind = 'local' | 'peer' | 'idle-timeout' | 'handshake-timeout' | 'rejected' | 'transport';

export const CLOSE_KINDS: Record<number, CloseKind> = {
  1: 'local',
  2: 'peer',
  3: 'idle-timeout',
  4: 'handshake-timeout',
  5: 'rejected',
};
