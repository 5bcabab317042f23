// Browsers: the client module by URL (bundlers emit it as an asset), loaded
// with top-level await so that importing the SDK is all a user does, through
// the SDK's own small bindings (client-glue.ts).
import { Client, ConfigInput, loadClient, protocolVersion } from '../client-glue.js';
import { fetchWasm } from '../load.js';
import { isRegistered, register, type ClientGlue } from '../wasm.js';

if (!isRegistered('client')) {
  register('client', { Client, ConfigInput, protocolVersion } as unknown as ClientGlue, await loadClient(await fetchWasm(new URL('./ricochet_wasm.wasm', import.meta.url))));
}
