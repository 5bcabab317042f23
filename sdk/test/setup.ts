// Unit tests import src/ directly; initialize the wasm core from the built file.
import { readFileSync } from 'node:fs';
import { initWasmSync } from '../src/wasm.js';

initWasmSync(readFileSync(new URL('../wasm/ricochet_wasm_bg.wasm', import.meta.url)));
