// A node:test reporter that appends each failing test, with its error, to the file TEST_FAILURES_FILE.
// `npm test` prints that file after its summary: a CI log is often read from its tail, and by then the
// integration phase's own list of failures is hundreds of lines up, behind the browser tests' output.
// Used beside the spec reporter: --test-reporter=./scripts/test-failures.mjs --test-reporter-destination=stdout
import fs from 'node:fs';
import { inspect } from 'node:util';
import { sourceName } from './compile-tests.mjs';

/** Lines kept of an error's message: a walkthrough's error carries its whole block output, and its end says why. */
const HEAD = 8;
const TAIL = 50;

function clip(text) {
  const lines = text.split('\n');
  if (lines.length <= HEAD + TAIL) return text;
  return [...lines.slice(0, HEAD), `  … ${lines.length - HEAD - TAIL} lines left out …`, ...lines.slice(-TAIL)].join('\n');
}

export default async function* failures(source) {
  const out = process.env.TEST_FAILURES_FILE;
  for await (const event of source) {
    if (!out || event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    const error = details?.error;
    // A suite fails when a test in it does: its own entry would only repeat the test's.
    if (error?.failureType === 'subtestsFailed') continue;
    const where = file ? sourceName(file) : '?';
    const why = error?.cause ?? error;
    // The message, then where it was thrown (a few frames: the rest is node:test's own).
    const text =
      why instanceof Error
        ? [
            clip(`${why.name}: ${why.message}`),
            ...(why.stack ?? '')
              .split('\n')
              .filter((l) => /^\s+at /.test(l))
              .slice(0, 2),
          ].join('\n')
        : clip(inspect(why, { depth: 4 }));
    fs.appendFileSync(out, `✖ ${name}\n  in ${where}\n${text}\n\n`);
  }
  yield '';
}
