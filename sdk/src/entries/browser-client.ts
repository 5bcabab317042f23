// Browsers: the client module by URL (bundlers emit it as an asset), loaded
// with top-level await so that importing the SDK is all a user does. The
// bindings by name, not the namespace: that would keep initSync in the bundle.
import initClient, { Client, ConfigInput, protocolVersion } from '../../wasm/ricochet_client.js';
import { fetchWasm } from '../load.js';
import { isRegistered, register } from '../wasm.js';

if (!isRegistered('client')) {
  register('client', { Client, ConfigInput, protocolVersion }, await initClient({ module_or_path: await fetchWasm(new URL('./ricochet_wasm.wasm', import.meta.url)) }));
}
