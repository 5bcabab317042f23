// Types for stack.mjs (the browser tests import it from TypeScript).
import type { Relay } from '@ricochet/relay';

export interface Arcade {
  /** The page: http://127.0.0.1:port/ (add ?room=N&name=X&force=websocket). */
  url: string;
  relay: Relay;
  relayHttp: string;
  gamePorts: number[];
  stop(): Promise<void>;
}

export function startArcade(o?: {
  port?: number;
  shards?: number;
  impairment?: string;
  logLevel?: string;
  onServerLine?: (line: Record<string, unknown>) => void;
}): Promise<Arcade>;

export function startGameServer(o?: {
  shards?: number;
  snapshotHz?: number;
  statsMs?: number;
  /** More arcade-server flags. */
  extraArgs?: string[];
  onLine?: (line: Record<string, unknown>) => void;
}): Promise<{ pid: number; ports: number[]; stop(): Promise<void> }>;
