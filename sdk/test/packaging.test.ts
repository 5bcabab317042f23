// Tests the BUILT package (sdk/dist, through its package.json exports map),
// as consumers get it. Run `npm run build` at the repo root first (npm test does).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
    const js = readFileSync(join(DIST, 'index.js'), 'utf8');
    // No URL to a .wasm file. (Decoding works on Node 20, which lacks
    // Uint8Array.fromBase64, thanks to esbuild --target es2022: the tests
    // above run there.)
    expect(js).not.toMatch(/new URL\(|\.wasm["']/);
    expect(js).toMatch(/"AGFzbQ/); // base64 of the wasm magic number
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
          `import { protocolVersion } from '@ricochet/sdk';
           export const v: number = protocolVersion();
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
