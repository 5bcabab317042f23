// Types of "@ricochet/sdk/esbuild", structural so that they need no esbuild types.
/** An esbuild plugin: pass it in `plugins` of `esbuild.build`. */
export interface RicochetEsbuildPlugin {
  name: string;
  setup(build: unknown): void;
}
/** Emits the SDK's .wasm files as assets in browser (ESM) builds; see the module comment. */
export declare function ricochet(): RicochetEsbuildPlugin;
export default ricochet;
