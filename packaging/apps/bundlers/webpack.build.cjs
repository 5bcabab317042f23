// webpack 5 production build of an app through webpack's Node API
// (copied next to index.html and main.js in the consumer directory). The
// slim entry's `new URL('./ricochet_wasm.wasm', import.meta.url)` is emitted
// as an asset by webpack itself.
const { copyFileSync } = require('node:fs');
const { join } = require('node:path');
const webpack = require('webpack');

webpack(
  {
    mode: 'production',
    context: __dirname,
    entry: './main.js',
    output: { path: join(__dirname, 'dist'), filename: 'main.js', module: true, clean: true },
    experiments: { outputModule: true },
    performance: { hints: false },
  },
  (err, stats) => {
    if (err || stats.hasErrors()) {
      console.error(err ?? stats.toString('errors-only'));
      process.exit(1);
    }
    copyFileSync(join(__dirname, 'index.html'), join(__dirname, 'dist', 'index.html'));
    console.log(stats.toString({ assets: true, modules: false, colors: false }));
  },
);
