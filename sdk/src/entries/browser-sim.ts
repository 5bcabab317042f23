// Browsers: the simulator's module by URL, with top-level await. Only
// "@ricochet/sdk/simulator" imports this.
import initSim, * as glue from '../../wasm/ricochet_sim.js';
import { fetchWasm } from '../load.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('sim')) {
  register('sim', glue, await initSim({ module_or_path: await fetchWasm(new URL('./ricochet_sim.wasm', import.meta.url)) }));
}
