import type { Db } from '../store/db.js';

// Minimal argv parsing: words, `--flag value`, `--flag=value` and boolean `--flag`.
export function parseArgs(argv: string[]): { words: string[]; flags: Record<string, string | true> } {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const [k, inline] = a.slice(2).split(/=(.*)/s, 2);
      if (inline !== undefined) flags[k] = inline;
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) flags[k] = argv[++i];
      else flags[k] = true;
    } else words.push(a);
  }
  return { words, flags };
}


export type Flags = Record<string, string | true>;

/** A mistake in the command line: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/** A flag's value; a required flag that is missing (or given without a value) is a UsageError. */
export function flag(flags: Flags, name: string, required: boolean, usage = ''): string | undefined {
  const v = flags[name];
  if (v === undefined || v === true) {
    if (required) throw new UsageError(`--${name} is required${usage ? `\n\n${usage}` : ''}`);
    return undefined;
  }
  return v;
}

/** --chain ID: the chain a new collection or reward is deployed on (absent: the default chain). */
export function chainFlag(flags: Flags, usage = ''): number | undefined {
  const v = flag(flags, 'chain', false, usage);
  if (flags.chain === true) throw new UsageError(`--chain needs a chain id${usage ? `\n\n${usage}` : ''}`);
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,15}$/.test(v)) throw new UsageError(`--chain must be a chain id (a positive integer), not "${v}"${usage ? `\n\n${usage}` : ''}`);
  return Number(v);
}

/** The uid of the App named by --app, which must exist. */
export async function requireApp(db: Db, flags: Flags, usage = ''): Promise<string> {
  const uid = flag(flags, 'app', true, usage)!;
  const app = await db.selectFrom('apps').select('uid').where('uid', '=', uid).executeTakeFirst();
  if (!app) throw new UsageError(`no App with uid ${uid} (see: mintworks app list)`);
  return uid;
}
