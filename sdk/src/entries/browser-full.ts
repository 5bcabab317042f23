// Browsers: the full module (Server, simulator) by URL, with top-level await.
import initFull, * as glue from '../../wasm/ricochet_wasm.js';
import { fetchWasm } from '../load.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('full')) {
  register('full', glue, await initFull({ module_or_path: await fetchWasm(new URL('./ricochet_full.wasm', import.meta.url)) }));
}
