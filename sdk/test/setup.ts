// Unit tests import src/ directly; initialize the wasm core from the built
// full module, as the Node entries do (it fills the client slot too), and the
// simulator's module, as the simulator entry does.
import { readFileSync } from 'node:fs';
import * as glue from '../wasm/ricochet_wasm.js';
import * as simGlue from '../wasm/ricochet_sim.js';
import { register } from '../src/wasm.js';

register('full', glue, glue.initSync({ module: readFileSync(new URL('../wasm/ricochet_wasm_bg.wasm', import.meta.url)) }));
register('sim', simGlue, simGlue.initSync({ module: readFileSync(new URL('../wasm/ricochet_sim_bg.wasm', import.meta.url)) }));
