// Node (and any non-browser runtime): the simulator's module embedded in the
// bundle and instantiated synchronously at import. Only the simulator entry
// (and the one CommonJS bundle) imports this: the other entries carry no simulator.
import bytes from '../../wasm/ricochet_sim_bg.wasm';
import * as glue from '../../wasm/ricochet_sim.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('sim')) register('sim', glue, glue.initSync({ module: bytes }));
