// What every process of an installation must agree on, recorded in the database (`meta`) by the first
// process: the public URL (token URIs on chain, links, the console's origin), the chains served and the
// operator token's digest. A later process with another value refuses to start naming both, instead of
// minting tokens whose URIs point at a URL nobody serves; `mintworks config set …` changes a value.
//
// The public URL: a PUBLIC_URL set in the environment is recorded as set; one derived from HOST:PORT
// (PUBLIC_URL unset) is a development default. A process without PUBLIC_URL takes the recorded value,
// so a worker process started with no PUBLIC_URL still mints with the URL the API processes serve. A
// worker-only process never records a default of its own: it does not serve it.
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { installationOf, type Config, type Installation } from '../config/config.js';
import type { Database } from '../store/schema.js';

const PUBLIC_URL = 'public_url';
/** 'set' (PUBLIC_URL, or `config set public-url`) or 'default' (derived from HOST:PORT). */
const PUBLIC_URL_SOURCE = 'public_url_source';
const CHAINS = 'chains';
const OPERATOR_DIGEST = 'operator_token_sha256';

export class InstallationMismatchError extends Error {}

type Db = Kysely<Database>;

export const operatorDigest = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

async function readMeta(db: Db): Promise<Map<string, string>> {
  const rows = await db.selectFrom('meta').select(['key', 'value']).where('key', 'in', [PUBLIC_URL, PUBLIC_URL_SOURCE, CHAINS, OPERATOR_DIGEST]).execute();
  return new Map(rows.map((r) => [r.key, r.value]));
}

export async function writeMeta(db: Db, values: Record<string, string>): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const [key, value] of Object.entries(values)) {
      await tx
        .insertInto('meta')
        .values({ key, value })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
        .execute();
    }
  });
}

/** The recorded public URL, or null when no process recorded one. */
export async function recordedPublicUrl(db: Db): Promise<{ url: string; source: 'set' | 'default' } | null> {
  const m = await readMeta(db);
  const url = m.get(PUBLIC_URL);
  return url ? { url, source: m.get(PUBLIC_URL_SOURCE) === 'set' ? 'set' : 'default' } : null;
}

/** What a process brings to the agreement besides its settings. */
export interface AgreeOptions {
  /** PUBLIC_URL was given in the environment. */
  publicUrlSet: boolean;
  /** This process is the whole installation (a SQLite database: nothing else may use it), so its development defaults replace the recorded ones. */
  sole: boolean;
  log: Logger;
  /** The operator token this process uses (OPERATOR_TOKEN, or the one generated into DATA_DIR); default OPERATOR_TOKEN. */
  operatorToken?: string;
  /** The database's home chain (src/boot/open-core.ts); default the default chain. */
  homeChainId?: number;
}

/**
 * Checks this process's settings against the installation's, records what is not recorded yet, and
 * returns the installation this process runs in (the recorded public URL when PUBLIC_URL is unset). The
 * config itself is left as the operator set it.
 * Long: the agreed facts (public URL, operator token, chains) are checked in turn before one write.
 */
export async function agreeOnInstallation(db: Db, config: Config, opts: AgreeOptions): Promise<Installation> {
  const operatorToken = opts.operatorToken ?? config.operatorToken;
  const m = await readMeta(db);
  const updates: Record<string, string> = {};

  // The public URL.
  let publicUrl = config.publicUrl;
  const recorded = m.get(PUBLIC_URL);
  const recordedSet = m.get(PUBLIC_URL_SOURCE) === 'set';
  if (opts.publicUrlSet) {
    if (recorded && recordedSet && recorded !== publicUrl) {
      throw new InstallationMismatchError(
        `PUBLIC_URL is ${publicUrl}, but this installation's public URL is ${recorded} (recorded in the database by the process that started first). ` +
          `Set PUBLIC_URL=${recorded}, or change the installation's URL with \`mintworks config set public-url ${publicUrl}\``,
      );
    }
    if (recorded !== publicUrl || !recordedSet) Object.assign(updates, { [PUBLIC_URL]: publicUrl, [PUBLIC_URL_SOURCE]: 'set' });
  } else if (recorded && (recordedSet || !opts.sole || !config.runApi)) {
    // A URL PUBLIC_URL set, one an API process of a PostgreSQL installation recorded, or the API's of
    // this very process (the workers' thread of `npm start`).
    publicUrl = recorded;
  } else if (config.runApi) {
    if (recorded !== publicUrl) Object.assign(updates, { [PUBLIC_URL]: publicUrl, [PUBLIC_URL_SOURCE]: 'default' });
  } else {
    throw new InstallationMismatchError(
      'PUBLIC_URL is not set and no API process of this installation has recorded one yet: set PUBLIC_URL to the URL clients use ' +
        '(token URIs on chain point at it), or start an API process first',
    );
  }

  // The operator token: its digest only, never the token.
  if (operatorToken) {
    const digest = operatorDigest(operatorToken);
    const had = m.get(OPERATOR_DIGEST);
    if (had && had !== digest && !opts.sole) {
      throw new InstallationMismatchError(
        `OPERATOR_TOKEN differs from this installation's (sha-256 ${digest.slice(0, 12)}… here, ${had.slice(0, 12)}… recorded): give every process the same OPERATOR_TOKEN, ` +
          'or record this one with `mintworks config set operator-token` (it reads OPERATOR_TOKEN)',
      );
    }
    if (had !== digest) updates[OPERATOR_DIGEST] = digest;
  }

  // The chains: the ids served, the default one first.
  const chains = config.chains.map((c) => c.id).join(',');
  const hadChains = m.get(CHAINS);
  if (hadChains && hadChains !== chains && !opts.sole) {
    throw new InstallationMismatchError(
      `this process serves chains ${chains}, but this installation serves ${hadChains}: give every process the same CHAIN_RPC_URL/CHAINS, ` +
        `or record the new list with \`mintworks config set chains\` (it reads them from this environment)`,
    );
  }
  if (hadChains !== chains) updates[CHAINS] = chains;

  if (Object.keys(updates).length) await writeMeta(db, updates);
  const settled = { operatorToken, homeChainId: opts.homeChainId };
  if (publicUrl === config.publicUrl) return installationOf(config, settled);
  opts.log.info({ url: publicUrl }, "PUBLIC_URL is not set here: using the installation's public URL");
  // Explorer links derived from the public URL follow it.
  const agreedChains = config.chains.map((c) =>
    c.explorer.startsWith(config.publicUrl) ? { ...c, explorer: publicUrl + c.explorer.slice(config.publicUrl.length) } : c,
  );
  return installationOf(config, { ...settled, publicUrl, chains: agreedChains });
}

/** `mintworks config set chains` / `operator-token`: records this environment's value. */
export async function recordChains(db: Db, config: Config): Promise<string> {
  const chains = config.chains.map((c) => c.id).join(',');
  await writeMeta(db, { [CHAINS]: chains });
  return chains;
}

export async function recordOperatorToken(db: Db, token: string): Promise<void> {
  await writeMeta(db, { [OPERATOR_DIGEST]: operatorDigest(token) });
}

/** `mintworks config set public-url`: records the new URL; returns the one it replaces. */
export async function setPublicUrl(db: Db, url: string): Promise<{ previous: string | null }> {
  const before = await recordedPublicUrl(db);
  await writeMeta(db, { [PUBLIC_URL]: url, [PUBLIC_URL_SOURCE]: 'set' });
  return { previous: before?.url ?? null };
}

/** What `mintworks config show` prints. */
export async function installationSettings(
  db: Db,
): Promise<{ public_url: string | null; public_url_source: string | null; chains: string | null; operator_token_sha256: string | null }> {
  const m = await readMeta(db);
  return {
    public_url: m.get(PUBLIC_URL) ?? null,
    public_url_source: m.get(PUBLIC_URL_SOURCE) ?? null,
    chains: m.get(CHAINS) ?? null,
    operator_token_sha256: m.get(OPERATOR_DIGEST) ?? null,
  };
}
