// A node:test reporter that prints, at the end of a run, how long each test file took (the sum of its
// top-level tests), longest first: what to look at when the integration suite nears CI's budget.
// Used beside the spec reporter: --test-reporter=./scripts/test-file-times.mjs --test-reporter-destination=stdout
import { sourceName } from './compile-tests.mjs';

export default async function* fileTimes(source) {
  const byFile = new Map();
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0 && event.data.file) {
      const file = sourceName(event.data.file);
      byFile.set(file, (byFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  const rows = [...byFile].sort((a, b) => b[1] - a[1]);
  if (rows.length === 0) return;
  yield '\n== time per file (sum of its top-level tests), longest first\n';
  for (const [file, ms] of rows) yield `${(ms / 1000).toFixed(1).padStart(7)} s  ${file}\n`;
}
