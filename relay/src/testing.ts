// For a game's own browser tests: start a relay in-process whose sessions
// run through a simulated network, with no root and no kernel support.
// Wrap it in a Playwright fixture (see e2e/fixtures.ts) or any test runner.
import { randomBytes } from 'node:crypto';
import type { ImpairmentSpec } from './impairment.js';
import { createLogger } from './log.js';
import { DEFAULTS, type RelayOptions } from './options.js';
import { Relay, type RelayAddresses } from './relay.js';
import { mintToken } from './token.js';

export interface TestRelayOptions {
  /** Game servers sessions may reach ("host:port"); the first is the default for tokens. */
  backends: string[];
  /** Simulated network for every session: a preset name or per-direction settings. Default none. */
  impairment?: ImpairmentSpec;
  /** Any other relay option (ports default to 0 = free ports on 127.0.0.1). */
  relay?: Partial<RelayOptions>;
}

export interface TestRelay {
  relay: Relay;
  addresses: RelayAddresses;
  /** http://127.0.0.1:port — serves /cert-hash, /healthz, /metrics, /test/impairment. */
  httpUrl: string;
  /** A connect token for `sub` to `backend` (default: the first backend). */
  token(sub?: string, backend?: string): string;
  /** Change the simulated network for live and new sessions (null = none). */
  setImpairment(spec: ImpairmentSpec | null): void;
  /** Cut every client's transport as a network failure would (sessions park for a resume); returns how many. */
  killTransports(): number;
  stop(): Promise<void>;
}

export async function startTestRelay(o: TestRelayOptions): Promise<TestRelay> {
  const secret = randomBytes(24).toString('base64url');
  const relay = new Relay(
    { ...DEFAULTS, httpPort: 0, wtPort: 0, tokenSecret: secret, allowBackends: o.backends, testControl: true, ...o.relay },
    createLogger(process.env.RICOCHET_LOG_LEVEL ?? 'warn'),
  );
  const addresses = await relay.start();
  if (o.impairment) relay.setImpairment(o.impairment);
  return {
    relay,
    addresses,
    httpUrl: `http://127.0.0.1:${addresses.httpPort}`,
    token: (sub = 'player', backend = o.backends[0]!) => mintToken(secret, { sub, backend, ttlSeconds: 600 }),
    setImpairment: (spec) => relay.setImpairment(spec),
    killTransports: () => relay.killTransports(),
    stop: () => relay.stop(),
  };
}
