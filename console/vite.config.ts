// The console's build (scripts/build-console.mjs runs it after generating the API schema and
// typechecking). Served by the API at /console/ under a strict CSP: no inline script or style,
// so nothing is inlined into index.html and no module-preload polyfill is injected.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const api = process.env.CONSOLE_API_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root,
  base: '/console/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    reportCompressedSize: false,
    sourcemap: false,
  },
  // For development only (`npx vite console`): the API of a local server.
  server: { proxy: { '/v2': api, '/v1': api } },
  preview: { proxy: { '/v2': api, '/v1': api } },
});
