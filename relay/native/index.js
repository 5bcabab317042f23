// ES module (relay/package.json has "type": "module"): loads the native
// WebTransport server and wraps it.
// `import { WtServer, available, loadError } from './native/index.js'`, or from
// CommonJS / createRequire: `require('./native/index.js')` (require(esm),
// Node >= 20.19; the module has no top-level await).
//
// The addon is looked for, in order (see addonCandidates):
//   1. the file named by RICOCHET_RELAY_ADDON (explicit: no fallback if it fails),
//   2. ./ricochet_relay_wt.node, the development build (node relay/native/build.mjs),
//   3. the platform package, e.g. @ricochet/relay-linux-x64-gnu (an optionalDependency).
// Importing never throws when none loads: `available` is false, `loadError`
// says what was tried, and `new WtServer()` throws that error.
//
// The addon delivers every event in one batch per threadsafe-function call
// (a flat array, four slots per event); this wrapper unpacks it into the
// onSession / onDatagrams / onClose callbacks, in order.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** The host facts the platform package depends on. */
export function hostFacts() {
  let glibc = null;
  if (process.platform === 'linux') {
    try {
      // Node built against glibc reports its runtime version; musl builds (Alpine) do not.
      glibc = process.report.getReport().header.glibcVersionRuntime ?? null;
    } catch {
      glibc = null;
    }
  }
  return { platform: process.platform, arch: process.arch, glibc };
}

/** npm name of the prebuilt addon for a platform: @ricochet/relay-<platform>-<arch>[-<abi>]. */
export function platformPackage({ platform, arch, glibc }) {
  const abi = platform === 'linux' ? (glibc ? '-gnu' : '-musl') : platform === 'win32' ? '-msvc' : '';
  return `@ricochet/relay-${platform}-${arch}${abi}`;
}

/**
 * Where to look, best first. Pure: the environment, the host facts, the dev
 * build's path and an existence check are passed in.
 */
export function addonCandidates({ env, facts, devPath, exists }) {
  const list = [];
  const explicit = env.RICOCHET_RELAY_ADDON;
  if (explicit) list.push({ from: 'RICOCHET_RELAY_ADDON', id: resolve(explicit), explicit: true });
  if (exists(devPath)) list.push({ from: 'development build', id: devPath, explicit: false });
  list.push({ from: 'platform package', id: platformPackage(facts), explicit: false });
  return list;
}

/**
 * Loads the first candidate that loads. An explicit path that fails ends the
 * search: silently using another addon would hide the misconfiguration.
 */
export function loadFirst(candidates, load) {
  const tried = [];
  for (const c of candidates) {
    try {
      return { native: load(c.id), from: c.from, id: c.id, error: null };
    } catch (e) {
      const why = e?.code === 'MODULE_NOT_FOUND' ? 'not found' : String(e?.message ?? e).split('\n')[0];
      tried.push(`${c.from} ${c.id}: ${why}`);
      if (c.explicit) break;
    }
  }
  const error = new Error(`no WebTransport addon could be loaded (tried ${tried.join('; ')})`);
  error.code = 'RICOCHET_RELAY_ADDON_MISSING';
  return { native: null, from: null, id: null, error };
}

const facts = hostFacts();
const result = loadFirst(
  addonCandidates({
    env: process.env,
    facts,
    devPath: fileURLToPath(new URL('./ricochet_relay_wt.node', import.meta.url)),
    exists: existsSync,
  }),
  require,
);
const native = result.native;

/** True when an addon loaded. */
export const available = native !== null;
/** Why none loaded (names each place tried), or null. */
export const loadError = result.error;
/** The platform package this host needs, e.g. "@ricochet/relay-linux-x64-gnu". */
export const addonPackage = platformPackage(facts);
/** Where the loaded addon came from: { from, id }, or null. */
export const addonSource = available ? { from: result.from, id: result.id } : null;

const SESSION = 0;
const DATAGRAMS = 1;
const CLOSE = 2;
const BACKEND_DATAGRAMS = 3;
const BACKEND_ERROR = 4;
const DETACHED = 5;
const OBSERVED = 6;
const ignore = () => {};

export class WtServer {
  #native;
  #onSession;
  #onDatagrams;
  #onClose;
  #onBackendDatagrams;
  #onBackendError;
  #onDetached;
  #onObserved;

  constructor(options) {
    if (!native) throw loadError;
    if (options === null || typeof options !== 'object') throw new TypeError('WtServer: options object required');
    const { onSession, onDatagrams, onClose, onBackendDatagrams, onBackendError, onDetached, onObserved, ...rest } = options;
    for (const [name, fn] of [['onSession', onSession], ['onDatagrams', onDatagrams], ['onClose', onClose]]) {
      if (typeof fn !== 'function') throw new TypeError(`WtServer: ${name} must be a function`);
    }
    if (!Number.isInteger(rest.port) || rest.port < 0 || rest.port > 65535) {
      throw new TypeError('WtServer: port must be an integer 0..65535');
    }
    this.#onSession = onSession;
    this.#onDatagrams = onDatagrams;
    this.#onClose = onClose;
    this.#onBackendDatagrams = onBackendDatagrams ?? ignore;
    this.#onBackendError = onBackendError ?? ignore;
    this.#onDetached = onDetached ?? ignore;
    this.#onObserved = onObserved ?? ignore;
    this.#native = new native.WtServerNative(rest, (batch) => this.#dispatch(batch));
  }

  #dispatch(b) {
    for (let i = 0; i < b.length; i += 4) {
      try {
        switch (b[i]) {
          case SESSION: this.#onSession(b[i + 1], b[i + 2], b[i + 3]); break;
          case DATAGRAMS: this.#onDatagrams(b[i + 1], b[i + 2]); break;
          case CLOSE: this.#onClose(b[i + 1], b[i + 2]); break;
          case BACKEND_DATAGRAMS: this.#onBackendDatagrams(b[i + 1], b[i + 2]); break;
          case BACKEND_ERROR: this.#onBackendError(b[i + 1], b[i + 2]); break;
          case DETACHED: this.#onDetached(b[i + 1], b[i + 2]); break;
          case OBSERVED: this.#onObserved(b[i + 1], b[i + 2]); break;
        }
      } catch (err) {
        // Deliver the rest of the batch; surface the error like an
        // EventEmitter listener would (uncaughtException).
        process.nextTick(() => { throw err; });
      }
    }
  }

  listen() { return this.#native.listen(); }
  send(id, datagrams) { return this.#native.send(id, datagrams); }
  close(id, code = 0, reason = '') { return this.#native.close(id, code >>> 0, String(reason)); }
  abort(id, code = 0, reason = '') { return this.#native.abort(id, code >>> 0, String(reason)); }
  rotateCertificate(certPem, keyPem) { return this.#native.rotateCertificate(certPem, keyPem); }
  certificate() { return this.#native.certificate(); }
  stats() { return this.#native.stats(); }
  stop() { return this.#native.stop(); }
  openBackend(ip, port) { return this.#native.openBackend(String(ip), port >>> 0); }
  sendBackend(bid, datagrams) { return this.#native.sendBackend(bid, datagrams); }
  closeBackend(bid) { return this.#native.closeBackend(bid); }
  attachBackend(bid, id, limits) { return this.#native.attachBackend(bid, id, limits); }
  detachBackend(bid) { return this.#native.detachBackend(bid); }
  backendStats(bid) { return this.#native.backendStats(bid); }
}
