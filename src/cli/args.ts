// Shared pieces of the `mintworks` commands (parsed by commander, see main.ts): value parsers that
// refuse bad input with a message naming what is wrong, the App lookup, and plain-text tables.
import { InvalidArgumentError, type Command } from 'commander';
import type { Db } from '../store/db.js';

/** A mistake in the command line that commander cannot see (e.g. an App that does not exist): exit code 2. */
export class UsageError extends Error {}

/** A parser for an integer option within [min, max]; anything else is refused (exit 2, naming the option). */
export function integer(min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`Must be an integer from ${min} to ${max}.`);
    return Number(value);
  };
}

/** A parser for an optional yes/no value of a switch (`--editable`, `--editable yes`, `--editable=false`). */
export function yesNo(value: string): boolean {
  const v = value.toLowerCase();
  if (['yes', 'true', '1'].includes(v)) return true;
  if (['no', 'false', '0'].includes(v)) return false;
  throw new InvalidArgumentError('Must be yes or no (or leave the value out for yes).');
}

/** A parser for a non-empty text option. */
export function text(max: number) {
  return (value: string): string => {
    if (!value.trim()) throw new InvalidArgumentError('Must not be empty.');
    if (value.length > max) throw new InvalidArgumentError(`Must be at most ${max} characters.`);
    return value;
  };
}

/** A URL option (https://…, ipfs://…), as the management API takes them; null when not given. */
export function urlOption(flag: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!URL.canParse(value)) throw new UsageError(`${flag}: Must be a URL (https://… or ipfs://…).`);
  return value;
}

/** What `collection update --clear` can clear, comma-separated. */
export function clearable(value: string): string[] {
  const fields = value.split(',').map((f) => f.trim());
  const known = ['royalty', 'description', 'image-url', 'external-url'];
  const unknown = fields.filter((f) => !known.includes(f));
  if (unknown.length) throw new InvalidArgumentError(`Unknown field(s) ${unknown.join(', ')}: give any of ${known.join(', ')}.`);
  return fields;
}

/** The uid of an App, which must exist. */
export async function requireApp(db: Db, uid: string): Promise<string> {
  const app = await db.selectFrom('apps').select('uid').where('uid', '=', uid).executeTakeFirst();
  if (!app) throw new UsageError(`no App with uid ${uid} (see: mintworks app list)`);
  return uid;
}

/** Rows as a plain-text table with a header line; `empty` when there are none. */
export function table(rows: Record<string, unknown>[], columns: [key: string, header: string][], empty: string): string {
  if (rows.length === 0) return empty;
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v));
  const cells = rows.map((r) => columns.map(([k]) => cell(r[k])));
  const widths = columns.map(([, h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ');
  return [line(columns.map(([, h]) => h.toUpperCase())), ...cells.map(line)].join('\n');
}

/** What every command returns: the object printed with --json, and the text printed without it. */
export interface Output {
  json: unknown;
  text: string;
}

/**
 * Commander checks required options before unknown ones, so a misspelt `--nmae` was reported as a
 * missing `--name`. This moves the check of every command's required options after commander's own
 * checks (a preAction hook): a misspelt option is then reported as unknown, with the option it was
 * probably meant to be, and a really missing one as before.
 */
export function reportUnknownOptionsFirst(cmd: Command): void {
  const required = cmd.options.filter((o) => o.mandatory);
  for (const o of required) o.mandatory = false;
  if (required.length)
    cmd.hook('preAction', (_, action) => {
      if (action !== cmd) return;
      for (const o of required)
        if (cmd.getOptionValue(o.attributeName()) === undefined)
          cmd.error(`error: required option '${o.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
    });
  for (const sub of cmd.commands) reportUnknownOptionsFirst(sub);
}

/** A collection's token standard: ERC721 or ERC1155 (case-insensitive). */
export function collectionStandard(value: string): 'ERC721' | 'ERC1155' {
  const v = value.toUpperCase().replace('-', '');
  if (v === 'ERC721' || v === 'ERC1155') return v;
  throw new UsageError(`--standard: ERC721 or ERC1155, not "${value}"`);
}
