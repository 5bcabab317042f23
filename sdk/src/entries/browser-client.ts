// Browsers: the client module by URL (bundlers emit it as an asset), loaded
// with top-level await so that importing the SDK is all a user does.
import initClient, * as glue from '../../wasm/ricochet_client.js';
import { fetchWasm } from '../load.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('client')) {
  register('client', glue, await initClient({ module_or_path: await fetchWasm(new URL('./ricochet_wasm.wasm', import.meta.url)) }));
}
