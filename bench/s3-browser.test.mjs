// node --test bench/s3-browser.test.mjs
// S3's browser rows run the loop Node runs: in each browser and module the
// same datagrams cross, byte for byte in count and size, as in Node; and so
// does the loop compiled to wasm (`s3_core`, the core alone), in all three.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runS3InBrowsers } from './s3-browser.mjs';
import { buildS3Core } from './s3-core.mjs';
import { runS3 } from './s3-loop.mjs';
import { loadFrom } from './s3-wasm.mjs';

const load = loadFrom(new URL('../sdk/wasm/', import.meta.url), buildS3Core());

test('the S3 loop moves the same datagrams in Chromium and Firefox as in Node, with either module and inside wasm', { timeout: 180_000 }, async () => {
  const options = { messages: 20_000, size: 100, perTick: 3 };
  const node = await runS3({ load, ...options });
  assert.equal(node.messages, options.messages);
  const core = await runS3({ load, ...options, clientModule: 's3_core' });
  const rows = await runS3InBrowsers(options);
  assert.deepEqual(
    rows.map((r) => `${r.browser} ${r.client_module}`),
    ['chromium ricochet_wasm', 'chromium ricochet_client', 'chromium s3_core', 'firefox ricochet_wasm', 'firefox ricochet_client', 'firefox s3_core'],
  );
  for (const r of [{ browser: 'node', ...core }, ...rows]) {
    const where = `${r.browser} ${r.client_module}`;
    assert.equal(r.messages, options.messages, where);
    assert.equal(r.datagrams, node.datagrams, where);
    assert.equal(r.wire_bytes_per_payload_byte, node.wire_bytes_per_payload_byte, where);
    assert.ok(r.ns_per_message > 0, where);
  }
});
