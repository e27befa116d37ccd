// Size limits that keep modules readable, checked by `npm run lint`: no file in src/ over 450 lines, no
// class over 250 (a class that grows past it holds more than one role: give each role a class), no
// function over 100 lines, and none over 60 unless a comment before it says why, on a line of its own
// that starts `Long:` (`// Long: one table of routes, an entry each`). Data tables are exempt (the schema,
// the migrations, the generated table of known chains): their length is their content, not tangled
// logic. Files and classes within 5 % of their cap are reported (not refused): the next change there
// should split rather than squeeze.
// Exits 1 listing each breach.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const MAX_FILE_LINES = 450;
const MAX_CLASS_LINES = 250;
const MAX_FUNCTION_LINES = 100;
/** Longer than this only with a `Long:` comment saying why. */
const EXPLAINED_FUNCTION_LINES = 60;
/** Within this share of a cap, a file or class is reported. */
const NEAR_CAP = 0.05;
const DATA_TABLES = [/^src\/store\/schema\.ts$/, /^src\/store\/migrations\//, /^src\/config\/known-chains\.ts$/];
const WHY = /^\s*(\/\/|\/?\*+)\s*Long:\s*\S/m;

function* sources(dir) {
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) yield* sources(rel);
    else if (/\.tsx?$/.test(e.name)) yield rel;
  }
}

/**
 * A long function is explained by a `Long:` comment before it (or before the declaration, property or
 * statement that holds it), or by the one of a function it is written inside (the reason covers it).
 */
function explained(sf, node) {
  if (WHY.test(leadingComments(sf, node))) return true;
  for (let n = node.parent; n && n !== sf; n = n.parent) if (ts.isFunctionLike(n) && 'body' in n && n.body) return explained(sf, n);
  return false;
}

/** The comments before a function, or before the declaration, property or statement that holds it. */
function leadingComments(sf, node) {
  const text = sf.getFullText();
  const found = [];
  for (let n = node; n && n !== sf; n = n.parent) {
    for (const r of ts.getLeadingCommentRanges(text, n.getFullStart()) ?? []) found.push(text.slice(r.pos, r.end));
    if (ts.isStatement(n) || ts.isClassElement(n) || ts.isPropertyAssignment(n) || ts.isObjectLiteralElement(n)) break;
  }
  return found.join('\n');
}

const lines = (sf, node) => sf.getLineAndCharacterOfPosition(node.end).line - sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
const near = (n, cap) => n <= cap && n > cap * (1 - NEAR_CAP);

const breaches = [];
const nearCaps = [];
for (const file of sources('src')) {
  if (DATA_TABLES.some((r) => r.test(file))) continue;
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const fileLines = text.split('\n').length;
  if (fileLines > MAX_FILE_LINES) breaches.push(`${file}: ${fileLines} lines (at most ${MAX_FILE_LINES}): split it by concern`);
  else if (near(fileLines, MAX_FILE_LINES)) nearCaps.push(`${file}: ${fileLines} lines of ${MAX_FILE_LINES}`);
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const at = (node) => `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
  const visit = (node) => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const n = lines(sf, node);
      const name = node.name?.getText(sf) ?? '(anonymous)';
      if (n > MAX_CLASS_LINES) breaches.push(`${at(node)}: class ${name} is ${n} lines (at most ${MAX_CLASS_LINES}): give each role a class`);
      else if (near(n, MAX_CLASS_LINES)) nearCaps.push(`${at(node)}: class ${name}: ${n} lines of ${MAX_CLASS_LINES}`);
    }
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const n = lines(sf, node);
      const name = node.name?.getText(sf) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(sf) : '(anonymous)');
      if (n > MAX_FUNCTION_LINES) breaches.push(`${at(node)}: function ${name} is ${n} lines (at most ${MAX_FUNCTION_LINES})`);
      else if (n > EXPLAINED_FUNCTION_LINES && !explained(sf, node))
        breaches.push(
          `${at(node)}: function ${name} is ${n} lines: over ${EXPLAINED_FUNCTION_LINES} only with a comment before it saying why ('Long: …'), else split it`,
        );
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
if (nearCaps.length) console.log(`Within ${NEAR_CAP * 100} % of a cap (split before adding):\n${nearCaps.map((l) => `  ${l}`).join('\n')}`);
for (const b of breaches) console.error(b);
if (breaches.length) process.exit(1);
console.log(
  `✔ sizes: no file over ${MAX_FILE_LINES} lines, no class over ${MAX_CLASS_LINES}, no function over ${MAX_FUNCTION_LINES} nor over ${EXPLAINED_FUNCTION_LINES} without a reason (data tables exempt)`,
);
