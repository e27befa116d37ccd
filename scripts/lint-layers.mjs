// What dependency-cruiser cannot see (it checks imports, and these go through the context object):
//   - src/http builds no database queries: routes call services (ctx.db reaches the database without
//     importing kysely);
//   - which database is in use is decided in src/store and src/jobs only: everything above asks them
//     for a capability (a row lock, a queue operation) instead of branching on the dialect.
// Run by `npm run lint:deps`; exits 1 with each breach as file:line.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

const rules = [
  {
    name: 'http-no-queries',
    files: /^src\/http\//,
    pattern: /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|transaction|connection)\s*\(|\bsql\s*`/,
    why: 'routes call services; move the query into one',
  },
  {
    name: 'dialect-in-store-and-jobs',
    files: /^src\/(?!store\/|jobs\/)/,
    pattern: /dialect\s*[!=]==?/,
    why: 'ask src/store (or the job queue) for the capability instead of branching on the dialect',
  },
  {
    name: 'services-no-dialect',
    files: /^src\/services\//,
    pattern: /\bctx\.dialect\b|\.dialect\b/,
    why: 'services do not know the database in use; ask src/store for the capability',
  },
];

function* walk(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (/\.tsx?$/.test(e.name)) yield p;
  }
}

const breaches = [];
for (const file of walk(path.join(root, 'src'))) {
  const rel = path.relative(root, file).split(path.sep).join('/');
  const active = rules.filter((r) => r.files.test(rel));
  if (active.length === 0) continue;
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, ''); // a comment may name what the code must not do
      if (/^\s*(\*|\/\*)/.test(code)) return;
      for (const r of active) if (r.pattern.test(code)) breaches.push(`${rel}:${i + 1}  ${r.name}: ${r.why}\n    ${line.trim()}`);
    });
}

if (breaches.length) {
  console.error(`${breaches.join('\n')}\n\nx ${breaches.length} layering breach(es)`);
  process.exit(1);
}
console.log('✔ no layering breaches (http queries, dialect branches)');
