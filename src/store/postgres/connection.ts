// How this process reaches PostgreSQL: the connection settings (docs/configuration.md, Database), each
// URL's TLS as libpq reads `sslmode`, and what a refused certificate is called when the start fails.
//
// A managed PostgreSQL is usually reached through a pooler in transaction mode (PgBouncer, Supavisor,
// RDS Proxy…): consecutive transactions of one client run on different server sessions. Nothing may
// then rely on a session: no named prepared statement, no session advisory lock, no session SET, no
// LISTEN. `DATABASE_POOL_MODE` says which kind `DATABASE_URL` is (it cannot be told from the URL), and
// `DATABASE_DIRECT_URL`, when given, is a session of its own for what needs one (migrations, LISTEN).
import fs from 'node:fs';
import type pg from 'pg';

export type PoolMode = 'session' | 'transaction';

export interface PgSettings {
  url: string;
  /** A session connection (not through a transaction pooler): migrations and LISTEN use it when given. */
  directUrl?: string;
  poolMode: PoolMode;
  /** The CA that signs the server's certificate (else the URL's `sslrootcert`, else PGSSLROOTCERT, else the system's). */
  caFile?: string;
  /** Connections of each pool this process opens (each thread with a store has one). */
  poolSize: number;
  /** 0: off. */
  statementTimeoutMs: number;
  /** 0: off. */
  idleInTransactionTimeoutMs: number;
}

/** The `sslmode` values honoured (libpq's meaning); `allow` and `prefer` fall back to plain text, so they are refused. */
export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof SSL_MODES)[number];
/** Query parameters of a libpq URL that describe its TLS (taken out before `pg` reads the URL). */
const TLS_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'ssl', 'uselibpqcompat'];

/** The URL's sslmode (or PGSSLMODE's), `disable` when neither says. */
export function sslModeOf(url: string, env: NodeJS.ProcessEnv = process.env): string {
  return new URL(url).searchParams.get('sslmode') ?? env.PGSSLMODE ?? 'disable';
}

/** Where the CA comes from, as the start-up message names it. */
function caSource(url: URL, s: Pick<PgSettings, 'caFile'>, env: NodeJS.ProcessEnv): { file: string; from: string } | null {
  const root = url.searchParams.get('sslrootcert');
  if (root && root !== 'system') return { file: root, from: 'sslrootcert' };
  if (s.caFile) return { file: s.caFile, from: 'DATABASE_CA_FILE' };
  if (env.PGSSLROOTCERT && root !== 'system') return { file: env.PGSSLROOTCERT, from: 'PGSSLROOTCERT' };
  return null;
}

/**
 * The `pg` client settings for `url`: its TLS as libpq would do it (`pg` alone treats `require` as
 * `verify-full`, and reads no CA setting of ours), the rest of the URL as it is.
 */
export function clientConfig(url: string, s: Pick<PgSettings, 'caFile'>, env: NodeJS.ProcessEnv = process.env): pg.ClientConfig {
  const u = new URL(url);
  const mode = sslModeOf(url, env) as SslMode;
  if (!(SSL_MODES as readonly string[]).includes(mode)) throw new Error(`sslmode=${mode} is not supported: use ${SSL_MODES.join(', ')}`);
  const ca = caSource(u, s, env);
  const cert = u.searchParams.get('sslcert');
  const key = u.searchParams.get('sslkey');
  for (const p of TLS_PARAMS) u.searchParams.delete(p);
  const read = (file: string, what: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${what} ${file}: ${(err as Error).message}`);
    }
  };
  let ssl: pg.ClientConfig['ssl'] = false;
  if (mode !== 'disable') {
    const verify = mode === 'verify-ca' || mode === 'verify-full';
    ssl = {
      rejectUnauthorized: verify,
      ...(verify && ca ? { ca: read(ca.file, `the CA certificate (${ca.from})`) } : {}),
      ...(cert && key ? { cert: read(cert, 'the client certificate (sslcert)'), key: read(key, 'the client key (sslkey)') } : {}),
      // verify-ca: the chain is checked, not the name (libpq's meaning).
      ...(mode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
    };
  }
  return { connectionString: u.toString(), ssl };
}

/** TLS failures of Node and of `pg`, by what they say. */
const TLS_CODES = /^(ERR_TLS_|CERT_|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|ERR_SSL|HOSTNAME_MISMATCH)/;
const TLS_MESSAGES = /certificate|SSL|TLS|altnames/i;

/**
 * A connection failure that is about TLS, said with the host and the reason (a refused certificate
 * stops the start: the operator must see which server and why). Other errors come back as they are.
 */
export function explainTlsFailure<E>(err: E, url: string, s: Pick<PgSettings, 'caFile'>, env: NodeJS.ProcessEnv = process.env): E | Error {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (!TLS_CODES.test(code) && !TLS_MESSAGES.test(message)) return err;
  const u = new URL(url);
  const ca = caSource(u, s, env);
  const mode = sslModeOf(url, env);
  const from = mode.startsWith('verify') ? `, CA from ${ca ? `${ca.from} ${ca.file}` : "the system's trusted CAs"}` : '';
  const explained = new Error(`TLS with ${u.hostname}:${u.port || 5432} failed: ${message || code} (sslmode=${mode}${from})`);
  Object.assign(explained, { code: code || 'TLS_FAILED' });
  return explained;
}
