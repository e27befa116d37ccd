// Builds the console (Preact + TypeScript) into build/console, served by the service under /console.
// Run through scripts/build-console.mjs (npm run build), which skips the build when nothing changed.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/console/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../build/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // Nothing inlined as data: URIs or inline scripts: the Content-Security-Policy allows files only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    chunkSizeWarningLimit: 300,
  },
});
