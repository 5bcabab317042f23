// Unit tests import src/ directly; initialize the wasm core from the built
// full module, as the Node entries do (it fills the client slot too).
import { readFileSync } from 'node:fs';
import * as glue from '../wasm/ricochet_wasm.js';
import { register } from '../src/wasm.js';

register('full', glue, glue.initSync({ module: readFileSync(new URL('../wasm/ricochet_wasm_bg.wasm', import.meta.url)) }));
