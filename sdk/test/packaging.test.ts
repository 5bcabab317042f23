// Tests the BUILT package (sdk/dist, through its package.json exports map),
// as consumers get it. Run `npm run build` at the repo root first (npm test does).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SDK = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(SDK, 'dist');
const require = createRequire(import.meta.url);

/** Runs a snippet in a plain Node process (no Vite transforms) from the sdk dir. */
function node(args: string[], code: string): string {
  return execFileSync(process.execPath, [...args, '-e', code], { cwd: SDK, encoding: 'utf8' }).trim();
}

/** A dist file and every dist file it imports, concatenated. */
function graph(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return '';
  seen.add(file);
  const js = readFileSync(join(DIST, file), 'utf8');
  const deps = [...js.matchAll(/(?:from|import)\s*["']\.\/([\w.-]+\.js)["']/g)].map((m) => m[1]!);
  return js + deps.map((d) => graph(d, seen)).join('');
}

describe('default entry (wasm embedded, initialized at import)', () => {
  it('ESM import works', async () => {
    const sdk = await import('@ricochet/sdk');
    expect(sdk.protocolVersion()).toBe(3);
  });

  it('CJS require works', () => {
    const sdk = require('@ricochet/sdk') as typeof import('@ricochet/sdk');
    expect(sdk.protocolVersion()).toBe(3);
  });

  it('works in plain Node, ESM and CJS', () => {
    expect(node(['--input-type=module'], "import { protocolVersion } from '@ricochet/sdk'; console.log(protocolVersion())")).toBe('3');
    expect(node(['--input-type=commonjs'], "console.log(require('@ricochet/sdk').protocolVersion())")).toBe('3');
  });

  it('embeds the wasm and does not fetch it', () => {
    const js = graph('index.js');
    // No URL to a .wasm file. (Decoding works on Node 20, which lacks
    // Uint8Array.fromBase64, thanks to esbuild --target es2022: the tests
    // above run there.)
    // No module fetched by URL (connectRelay builds URLs from strings; none is relative to the module).
    expect(js).not.toMatch(/import\.meta\.url|\.wasm["']/);
    expect(js).toMatch(/"AGFzbQ/); // base64 of the wasm magic number
  });
});

describe('subpaths in plain Node (ESM and CJS share one module instance per format)', () => {
  const check = (spec: string, expr: string) => {
    expect(node(['--input-type=module'], `import * as m from '${spec}'; console.log(${expr})`)).toBe('true');
    expect(node(['--input-type=commonjs'], `const m = require('${spec}'); console.log(${expr})`)).toBe('true');
  };
  it('@ricochet/sdk keeps Server for Node game servers', () => check('@ricochet/sdk', "typeof new m.Server().attach === 'function' && !('SimLink' in m)"));
  it('@ricochet/sdk/server', () => check('@ricochet/sdk/server', "m.relayAttestKey('s').length === 32 && typeof m.serveUdp === 'function'"));
  it('@ricochet/sdk/simulator', () => check('@ricochet/sdk/simulator', "m.SimLink.fromProfile('wifi', true).nextArrival() === -1 && m.NETWORK_PROFILES.length === 8"));
  it('@ricochet/sdk/esbuild', () => check('@ricochet/sdk/esbuild', "typeof m.ricochet().setup === 'function'"));
  it('@ricochet/sdk/slim (CJS too), also without process.getBuiltinModule (Node < 20.16)', () => {
    expect(node(['--input-type=commonjs'], "const m = require('@ricochet/sdk/slim'); m.init().then(() => console.log(m.protocolVersion()))")).toBe('3');
    expect(node(['--input-type=module'], "delete process.getBuiltinModule; const m = await import('@ricochet/sdk/slim'); await m.init(); console.log(m.protocolVersion())")).toBe('3');
  });
  it('Server from /server is the one from the main entry (one instance)', () => {
    expect(node(['--input-type=module'], "import { Server } from '@ricochet/sdk/server'; import * as m from '@ricochet/sdk'; console.log(m.Server === Server)")).toBe('true');
    expect(node(['--input-type=commonjs'], "console.log(require('@ricochet/sdk/server').Server === require('@ricochet/sdk').Server)")).toBe('true');
  });
});

describe('browser condition (client module by URL, top-level await)', () => {
  it('loads without init(); Server throws clearly until /server is imported', () => {
    const out = node(
      ['--conditions=browser', '--input-type=module'],
      `import { protocolVersion, Server } from '@ricochet/sdk';
       console.log(protocolVersion());
       try { new Server(); } catch (e) { console.log(e.message.includes('@ricochet/sdk/server')); }
       await import('@ricochet/sdk/server');
       console.log(typeof new Server().attach);`,
    );
    expect(out.split('\n')).toEqual(['3', 'true', 'function']);
  });

  it('ships only the client module to the browser entry', () => {
    const js = graph('browser.js');
    expect(js).toContain('new URL("./ricochet_wasm.wasm", import.meta.url)');
    expect(js).not.toMatch(/"AGFzbQ/);
    const exportsOf = (f: string) => WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(join(DIST, f)))).map((e) => e.name);
    expect(exportsOf('ricochet_wasm.wasm').some((n) => n.startsWith('server_'))).toBe(false);
    expect(exportsOf('ricochet_full.wasm').some((n) => n.startsWith('server_'))).toBe(true);
  });

  it('keeps the simulator out of the production modules and entries', () => {
    const exportsOf = (f: string) => WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(join(DIST, f)))).map((e) => e.name);
    for (const f of ['ricochet_wasm.wasm', 'ricochet_full.wasm']) expect(exportsOf(f).some((n) => n.startsWith('link_'))).toBe(false);
    expect(exportsOf('ricochet_sim.wasm').some((n) => n.startsWith('link_'))).toBe(true);
    // The simulator's glue (wasm.link_new(…)) and its loaders stay out of every other entry's graph.
    for (const entry of ['index.js', 'browser.js', 'server.js', 'server.browser.js', 'slim.js']) {
      expect(graph(entry)).not.toMatch(/\.link_(new|send)\(|init-(node|browser)-sim|ricochet_sim/);
    }
    expect(graph('simulator.js')).toMatch(/\.link_new\(/);
    expect(graph('simulator.browser.js')).toContain('new URL("./ricochet_sim.wasm", import.meta.url)');
  });

  it('esbuild with @ricochet/sdk/esbuild: emits the wasm, and the bundle runs', async () => {
    const esbuild = await import('esbuild');
    const { ricochet } = await import('@ricochet/sdk/esbuild');
    const dir = mkdtempSync(join(SDK, 'test', '.esbuild-'));
    try {
      writeFileSync(join(dir, 'app.mjs'), "import { protocolVersion } from '@ricochet/sdk'; console.log(protocolVersion());");
      for (const format of ['esm', 'iife'] as const) {
        const outfile = join(dir, 'out', format === 'esm' ? 'app.mjs' : 'app.js');
        await esbuild.build({ entryPoints: [join(dir, 'app.mjs')], bundle: true, platform: 'browser', format, outfile, plugins: [ricochet()], logLevel: 'error' });
        const js = readFileSync(outfile, 'utf8');
        if (format === 'esm') {
          // The wasm is an emitted asset next to the bundle; file: URLs are read from disk in Node.
          expect(readdirSync(join(dir, 'out')).some((f) => /^ricochet_wasm-.*\.wasm$/.test(f))).toBe(true);
          expect(js).not.toMatch(/"AGFzbQ/);
          expect(execFileSync(process.execPath, [outfile], { encoding: 'utf8' }).trim()).toBe('3');
        } else {
          expect(js).toMatch(/"AGFzbQ/); // no top-level await in iife: the embedded entry
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('slim entry (wasm loaded by init)', () => {
  it('throws a clear error before init, works after', () => {
    const out = node(
      ['--input-type=module'],
      `import { init, protocolVersion } from '@ricochet/sdk/slim';
       try { protocolVersion(); console.log('no error'); } catch (e) { console.log(e.message); }
       await init();
       await init(); // idempotent
       console.log(protocolVersion());`,
    );
    expect(out.split('\n')).toEqual([expect.stringMatching(/not initialized.*await init\(\)/), '3']);
  });

  it('init accepts the module bytes', () => {
    const out = node(
      ['--input-type=module'],
      `import { readFileSync } from 'node:fs';
       import { init, protocolVersion } from '@ricochet/sdk/slim';
       await init(readFileSync(new URL('./dist/ricochet_wasm.wasm', 'file://${SDK}/')));
       console.log(protocolVersion());`,
    );
    expect(out).toBe('3');
  });

  it('ships a valid wasm file next to slim.js', () => {
    const bytes = readFileSync(join(DIST, 'ricochet_wasm.wasm'));
    expect(WebAssembly.validate(bytes)).toBe(true);
    expect(readFileSync(join(DIST, 'slim.js'), 'utf8')).toContain("new URL(\"./ricochet_wasm.wasm\", import.meta.url)");
  });
});

describe('type declarations', () => {
  it('are our own, not wasm-bindgen output', () => {
    const types = Object.fromEntries(
      ['index.d.ts', 'index.d.cts', 'slim.d.ts'].map((f) => [f, readFileSync(join(DIST, f), 'utf8')]),
    );
    expect(types['index.d.ts']).toContain('protocolVersion');
    expect(types['index.d.cts']).toContain('protocolVersion');
    expect(types['slim.d.ts']).toContain('function init(');
    expect(types['slim.d.ts']).toContain("from './index.js'");
    for (const dts of Object.values(types)) {
      // nothing imported from wasm-bindgen's output or src/wasm.ts
      expect(dts).not.toMatch(/(from\s*|import\s*\(\s*)['"][^'"]*(ricochet_wasm|wasm\.js)|\b(Sync)?InitInput\b/);
    }
  });

  // Consumers without DOM or Node types, with skipLibCheck off (the setting
  // that wasm-bindgen's own .d.ts breaks), in the module modes TS supports.
  const consumers = {
    'bundler resolution': { type: 'module', module: 'ESNext', moduleResolution: 'Bundler', slim: true },
    'NodeNext, ESM consumer': { type: 'module', module: 'NodeNext', moduleResolution: 'NodeNext', slim: true },
    'NodeNext, CJS consumer': { type: 'commonjs', module: 'NodeNext', moduleResolution: 'NodeNext', slim: false },
  };
  for (const [name, c] of Object.entries(consumers)) {
    it(`type-check in a consumer: ${name}, lib es2022 only, skipLibCheck off`, async () => {
      const ts = (await import('typescript')).default;
      const dir = mkdtempSync(join(tmpdir(), 'ricochet-types-'));
      try {
        mkdirSync(join(dir, 'node_modules', '@ricochet'), { recursive: true });
        symlinkSync(SDK, join(dir, 'node_modules', '@ricochet', 'sdk'), 'dir');
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: c.type }));
        writeFileSync(
          join(dir, 'consumer.ts'),
          `import { Connection, protocolVersion, type Transport } from '@ricochet/sdk';
           export const v: number = protocolVersion();
           // Channel names are typed through the published declarations too.
           declare const t: Transport;
           const conn = new Connection(t, { channels: [{ kind: 'unreliable', name: 'pos' }] });
           conn.send('pos', new Uint8Array(1));
           // @ts-expect-error: not a declared channel
           conn.send('po', new Uint8Array(1));
           ` +
            (c.slim
              ? `import { init, protocolVersion as slimVersion, type WasmSource } from '@ricochet/sdk/slim';
                 const s: WasmSource = new Uint8Array(8);
                 export const p: Promise<number> = init(s).then(() => slimVersion());`
              : ''),
        );
        const config = ts.parseJsonConfigFileContent(
          {
            compilerOptions: {
              target: 'ES2022',
              lib: ['ES2022'],
              types: [],
              module: c.module,
              moduleResolution: c.moduleResolution,
              strict: true,
              noEmit: true,
              skipLibCheck: false,
            },
            files: ['consumer.ts'],
          },
          ts.sys,
          dir,
        );
        const program = ts.createProgram(config.fileNames, config.options);
        const diagnostics = ts.getPreEmitDiagnostics(program);
        const text = ts.formatDiagnostics(diagnostics, {
          getCanonicalFileName: (f) => f,
          getCurrentDirectory: () => dir,
          getNewLine: () => '\n',
        });
        expect(text).toBe('');
        const sdkFiles = program.getSourceFiles().map((f) => f.fileName).filter((f) => f.includes('/dist/'));
        expect(sdkFiles.length).toBeGreaterThan(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
