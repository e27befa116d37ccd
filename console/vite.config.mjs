// Builds the console (Preact + TypeScript) into build/console, served by the service under /console,
// and the API reference (docs.html) the service serves at /docs.
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
    // Two pages: the console (index.html, served under /console) and the API reference (docs.html, at /docs).
    rollupOptions: {
      input: { console: fileURLToPath(new URL('index.html', import.meta.url)), docs: fileURLToPath(new URL('docs.html', import.meta.url)) },
    },
  },
});
