// ES module (relay/package.json has "type": "module"): loads the native
// WebTransport server built by `node relay/native/build.mjs`.
// `import { WtServer } from './native/index.js'`, or from CommonJS /
// createRequire: `require('./native/index.js').WtServer` (require(esm),
// Node >= 20.19; the module has no top-level await).
//
// The addon delivers every event in one batch per threadsafe-function call
// (a flat array, four slots per event); this wrapper unpacks it into the
// onSession / onDatagrams / onClose callbacks, in order.

import { createRequire } from 'node:module';

const native = createRequire(import.meta.url)('./ricochet_relay_wt.node');

const SESSION = 0;
const DATAGRAMS = 1;
const CLOSE = 2;

export class WtServer {
  #native;
  #onSession;
  #onDatagrams;
  #onClose;

  constructor(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('WtServer: options object required');
    const { onSession, onDatagrams, onClose, ...rest } = options;
    for (const [name, fn] of [['onSession', onSession], ['onDatagrams', onDatagrams], ['onClose', onClose]]) {
      if (typeof fn !== 'function') throw new TypeError(`WtServer: ${name} must be a function`);
    }
    if (!Number.isInteger(rest.port) || rest.port < 0 || rest.port > 65535) {
      throw new TypeError('WtServer: port must be an integer 0..65535');
    }
    this.#onSession = onSession;
    this.#onDatagrams = onDatagrams;
    this.#onClose = onClose;
    this.#native = new native.WtServerNative(rest, (batch) => this.#dispatch(batch));
  }

  #dispatch(b) {
    for (let i = 0; i < b.length; i += 4) {
      try {
        switch (b[i]) {
          case SESSION: this.#onSession(b[i + 1], b[i + 2], b[i + 3]); break;
          case DATAGRAMS: this.#onDatagrams(b[i + 1], b[i + 2]); break;
          case CLOSE: this.#onClose(b[i + 1], b[i + 2]); break;
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
  rotateCertificate(certPem, keyPem) { return this.#native.rotateCertificate(certPem, keyPem); }
  certificate() { return this.#native.certificate(); }
  stats() { return this.#native.stats(); }
  stop() { return this.#native.stop(); }
}
