// Node (and any non-browser runtime): the full module is embedded in the bundle
// and instantiated synchronously at import, shared by every Node entry.
import bytes from '../../wasm/ricochet_wasm_bg.wasm';
import * as glue from '../../wasm/ricochet_wasm.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('full')) register('full', glue, glue.initSync({ module: bytes }));
