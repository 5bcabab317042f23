// Vite production build of an app (copied next to its index.html and
// main.js in the consumer directory). base './': served under /vite/.
export default { base: './', logLevel: 'warn', build: { outDir: 'dist', emptyOutDir: true } };
