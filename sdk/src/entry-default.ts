// Default entry ("@ricochet/sdk"): the wasm is embedded in the bundle and
// instantiated synchronously at import, so the SDK is ready to use at once.
import bytes from '../wasm/ricochet_wasm_bg.wasm';
import { initWasmSync } from './wasm.js';

initWasmSync(bytes);

export * from './index.js';
