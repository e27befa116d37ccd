// Is there an installation where the environment points? A command that only reads asks first, so a
// mistyped DATA_DIR (or a shell without DATABASE_URL) is told so instead of getting a new, empty
// installation with a new master key.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config/config.js';
import { sqliteFile } from '../store/sqlite/open.js';
import { clientConfig } from '../store/postgres/connection.js';
import { UsageError } from './args.js';

const isPostgres = (config: Config) => /^postgres(ql)?:\/\//.test(config.databaseUrl ?? '');

export async function assertInstallation(config: Config): Promise<void> {
  const none = (where: string) => new UsageError(`no installation at ${where} (set DATA_DIR or DATABASE_URL)`);
  if (isPostgres(config)) {
    const client = new pg.Client(clientConfig(config.databaseUrl!, config.database));
    client.on('error', () => {});
    try {
      await client.connect();
      const r = await client.query<{ t: string | null }>(`select to_regclass('meta')::text as t`);
      if (!r.rows[0]?.t) throw none(redactedUrl(config.databaseUrl!));
    } finally {
      await client.end().catch(() => {});
    }
  } else {
    const file = sqliteFile(config.databaseUrl, config.dataDir);
    if (!fs.existsSync(file)) throw none(config.databaseUrl?.startsWith('sqlite:') ? file : config.dataDir);
  }
  // With an HSM the master key lives wrapped in the database, never in a file.
  if (config.keyCustody !== 'pkcs11' && !config.masterKeyHex && !fs.existsSync(path.join(config.dataDir, 'master.key'))) {
    throw new UsageError(`no installation at ${config.dataDir} (set DATA_DIR or DATABASE_URL): it has no master.key, and MASTER_KEY is not set`);
  }
}

function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'DATABASE_URL';
  }
}
