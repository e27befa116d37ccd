// Every setting of Mintworks, parsed and defaulted in one place. Bad values stop the start with a
// message naming the variable, so an operator never has to guess which one is wrong.
import { publicUrlProblem } from '../domain/public-url.js';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { SSL_MODES } from '../store/postgres/connection.js';
import { DEFAULT_MAX_FEE_GWEI, type ChainSpec } from '../chain/chains.js';
import { assembleChains, ChainConfigError, parseChainsVar } from './chains.js';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65535);

/** One entry of TRUST_PROXY: an address, a CIDR range, or a named range of proxy-addr. */
function isProxyEntry(s: string): boolean {
  if (s === 'loopback' || s === 'linklocal' || s === 'uniquelocal') return true;
  const [addr, bits, ...rest] = s.split('/');
  const family = isIP(addr);
  if (family === 0 || rest.length) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

const proxyList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean),
  )
  .refine(
    (list) => list.every(isProxyEntry),
    'must be a comma-separated list of proxy addresses or CIDR ranges (e.g. 10.0.0.1,192.168.0.0/16), or loopback, linklocal, uniquelocal',
  );

/** The environment variables, each with its check and default. */
const envSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  PUBLIC_URL: z
    .string()
    .refine((v) => publicUrlProblem(v) === null, {
      error: (i) => `not a public URL: ${publicUrlProblem(String(i.input))} (an origin and an optional clean path)`,
    })
    .optional(),
  DATABASE_URL: z
    .string()
    .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must start with postgres:// (or sqlite:<file>)')
    .refine(sslModeAccepted, `sslmode must be one of ${SSL_MODES.join(', ')}`)
    .optional(),
  DATABASE_DIRECT_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must start with postgres://')
    .refine(sslModeAccepted, `sslmode must be one of ${SSL_MODES.join(', ')}`)
    .optional(),
  DATABASE_POOL_MODE: z.enum(['session', 'transaction']).default('session'),
  DATABASE_CA_FILE: z.string().min(1).optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
  DATABASE_WORKERS_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(4),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  CHAIN_RPC_URL: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.length > 0 && list.every((u) => /^https?:\/\/[^\s]+$/.test(u) && URL.canParse(u)),
      'must be an http(s) URL, or a comma-separated list of them (providers in order of preference)',
    )
    .optional(),
  CHAINS: z.string().optional(),
  EMBEDDED_CHAIN: bool.optional(),
  ANVIL_PORT: port.default(8545),
  CHAIN_ID: z.coerce.number().int().positive().default(31337),
  CHAIN_NAME: z.string().min(1).default('Anvil'),
  EXPLORER_URL: z.url({ protocol: /^https?$/ }).optional(),
  MASTER_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes); generate one with `openssl rand -hex 32`')
    .optional(),
  KEY_CUSTODY: z.enum(['local', 'pkcs11']).default('local'),
  PKCS11_MODULE: z.string().min(1).optional(),
  PKCS11_TOKEN_LABEL: z.string().min(1).max(32).optional(),
  PKCS11_PIN: z.string().min(1).optional(),
  PKCS11_PIN_FILE: z.string().min(1).optional(),
  OPERATOR_TOKEN: z.string().min(24, 'must be at least 24 characters').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  RELAYER_COUNT: z.coerce.number().int().min(1).max(32).default(2),
  MINT_BATCH_SIZE: z.coerce.number().int().min(1).max(2000).default(500),
  MINT_YIELD_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  CHAIN_CONFIRMATIONS: z.coerce.number().int().min(0).max(100).default(0),
  CHAIN_STUCK_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  CHAIN_VERIFY_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  CHAIN_VERIFY_BATCH: z.coerce.number().int().min(1).max(10_000).default(100),
  CHAIN_MAX_FEE_GWEI: z.coerce.number().positive().max(1_000_000).default(DEFAULT_MAX_FEE_GWEI),
  WORKERS: bool.default(true),
  WORKER_THREAD: bool.default(true),
  WORKER_NICE: z.coerce.number().int().min(0).max(19).default(10),
  CREATES_THREAD: bool.default(true),
  RETENTION_DAYS: z.coerce.number().int().min(0).max(36500).default(30),
  ASSET_CACHE_ENTRIES: z.coerce.number().int().min(0).max(10_000_000).default(10_000),
  ASSET_CACHE_MB: z.coerce.number().int().min(0).max(65_536).default(16),
  MEMORY_LIMIT_MB: z.coerce.number().int().min(0).max(1_048_576).default(512),
  CREATES_QUEUE_MB: z.coerce.number().int().min(0).max(65_536).default(32),
  API: bool.default(true),
  DEMO_APP: bool.default(true),
  OUTBOUND_ALLOW_PRIVATE: bool.default(false),
  IMAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(20 * 1024 * 1024),
  IPFS_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  PINNING_SERVICE_URL: z.url({ protocol: /^https?$/ }).optional(),
  PINNING_SERVICE_TOKEN: z.string().min(1).optional(),
  RATE_LIMIT: z.coerce.number().int().min(0).max(100_000_000).default(6000),
  RATE_LIMIT_AUTH_FAILURES: z.coerce.number().int().min(0).max(100_000_000).default(100),
  OPERATOR_AUTH_FAILURES: z.coerce.number().int().min(0).max(100_000_000).default(10),
  OPERATOR_AUTH_GLOBAL_FAILURES: z.coerce.number().int().min(0).max(100_000_000).default(1000),
  TRUST_PROXY: proxyList.optional(),
  CHAIN_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  ALERT_WEBHOOK_URL: z.url({ protocol: /^https?$/ }).optional(),
  ALERT_WEBHOOK_SECRET: z
    .string()
    .regex(
      /^whsec_[A-Za-z0-9+/]{32,}={0,2}$/,
      'must be whsec_ and base64 of at least 24 random bytes; generate one with `echo whsec_$(openssl rand -base64 32)`',
    )
    .optional(),
});

const trimSlashes = (url: string) => url.replace(/\/+$/, '');

/** A PostgreSQL URL's sslmode, when it has one, is one the store honours (a sqlite: URL has none). */
function sslModeAccepted(url: string): boolean {
  if (!/^postgres(ql)?:\/\//.test(url) || !URL.canParse(url)) return true;
  const mode = new URL(url).searchParams.get('sslmode');
  return mode === null || (SSL_MODES as readonly string[]).includes(mode);
}

type Env = z.output<typeof envSchema>;

/**
 * Settings that are only wrong together: the variable to change and why, as for a bad value. In the
 * order they are checked, so the same environment is always refused with the same message.
 */
function conflictingSettings(c: Env): { variable: string; message: string } | null {
  if (c.ALERT_WEBHOOK_URL && !c.ALERT_WEBHOOK_SECRET)
    return { variable: 'ALERT_WEBHOOK_SECRET', message: 'required when ALERT_WEBHOOK_URL is set (alerts are signed like App webhooks)' };
  if (c.PINNING_SERVICE_URL && !c.PINNING_SERVICE_TOKEN) return { variable: 'PINNING_SERVICE_TOKEN', message: 'required when PINNING_SERVICE_URL is set' };
  if (c.KEY_CUSTODY === 'pkcs11') {
    // With an HSM no key may come from the environment or DATA_DIR: that is the point of it.
    if (c.MASTER_KEY)
      return { variable: 'MASTER_KEY', message: 'must not be set with KEY_CUSTODY=pkcs11 (the master key is wrapped by the HSM; see docs/custody.md)' };
    if (!c.PKCS11_MODULE)
      return { variable: 'PKCS11_MODULE', message: 'required with KEY_CUSTODY=pkcs11 (the path of the PKCS#11 library, e.g. /usr/lib/softhsm/libsofthsm2.so)' };
    if (!c.PKCS11_TOKEN_LABEL) return { variable: 'PKCS11_TOKEN_LABEL', message: 'required with KEY_CUSTODY=pkcs11' };
    if (!c.PKCS11_PIN && !c.PKCS11_PIN_FILE) return { variable: 'PKCS11_PIN', message: 'PKCS11_PIN or PKCS11_PIN_FILE is required with KEY_CUSTODY=pkcs11' };
  }
  if (c.DATABASE_DIRECT_URL && !/^postgres(ql)?:\/\//.test(c.DATABASE_URL ?? ''))
    return { variable: 'DATABASE_DIRECT_URL', message: "is for PostgreSQL: set DATABASE_URL to the postgres:// URL (the pooler's) as well" };
  if (c.CHAIN_RPC_URL && c.EMBEDDED_CHAIN === true)
    return { variable: 'EMBEDDED_CHAIN', message: 'CHAIN_RPC_URL replaces the embedded chain; list further chains in CHAINS instead' };
  return null;
}

/** The chains served, the default one first; throws ChainConfigError naming the variable that is wrong. */
function chainsOf(c: Env, publicUrl: string): ChainSpec[] {
  return assembleChains(
    {
      embedded: c.EMBEDDED_CHAIN ?? !c.CHAIN_RPC_URL,
      chainId: c.CHAIN_ID,
      chainName: c.CHAIN_NAME,
      chainRpcUrl: c.CHAIN_RPC_URL?.map(trimSlashes),
      explorerUrl: trimSlashes(c.EXPLORER_URL ?? `${publicUrl}/explorer`),
      confirmations: c.CHAIN_CONFIRMATIONS,
      maxFeeGwei: c.CHAIN_MAX_FEE_GWEI,
    },
    c.CHAINS ? parseChainsVar(c.CHAINS, publicUrl, c.CHAIN_CONFIRMATIONS, c.CHAIN_MAX_FEE_GWEI) : [],
  );
}

/** Where the service lives: its address, its directory and its database. */
function placeSettings(c: Env, publicUrl: string) {
  return {
    port: c.PORT,
    host: c.HOST,
    dataDir: path.resolve(c.DATA_DIR),
    publicUrl,
    /** PUBLIC_URL was given (else publicUrl is derived from HOST:PORT, or the installation's recorded one is used). */
    publicUrlSet: c.PUBLIC_URL !== undefined,
    databaseUrl: c.DATABASE_URL,
    /** PostgreSQL: how it is reached (src/store/postgres/connection.ts; docs/configuration.md, Database). */
    database: {
      directUrl: c.DATABASE_DIRECT_URL,
      poolMode: c.DATABASE_POOL_MODE,
      caFile: c.DATABASE_CA_FILE,
      poolSize: c.DATABASE_POOL_SIZE,
      /** The pool of a part that runs only the workers, at most poolSize (see poolSizeOf in boot/open-store.ts). */
      workersPoolSize: Math.min(c.DATABASE_WORKERS_POOL_SIZE, c.DATABASE_POOL_SIZE),
      statementTimeoutMs: c.DATABASE_STATEMENT_TIMEOUT_MS,
      idleInTransactionTimeoutMs: c.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
  };
}

function chainSettings(c: Env, chains: ChainSpec[]) {
  return {
    /** The first of CHAIN_RPC_URL's providers (the others are in `chains`). */
    chainRpcUrl: c.CHAIN_RPC_URL?.[0],
    anvilPort: c.ANVIL_PORT,
    /** Every chain served, the default one first: the embedded chain, else the first external one (see src/config/chains.ts). */
    chains,
  };
}

/** The secrets: the keys' custody and the operator's token. */
function secretSettings(c: Env) {
  return {
    masterKeyHex: c.MASTER_KEY,
    /** Where keys live (docs/custody.md): `local` (MASTER_KEY or DATA_DIR/master.key) or `pkcs11` (an HSM). */
    keyCustody: c.KEY_CUSTODY,
    /** The PKCS#11 token: needed with KEY_CUSTODY=pkcs11, and by `mintworks keys migrate --to pkcs11`. */
    pkcs11:
      c.PKCS11_MODULE && c.PKCS11_TOKEN_LABEL
        ? { module: c.PKCS11_MODULE, tokenLabel: c.PKCS11_TOKEN_LABEL, pin: c.PKCS11_PIN, pinFile: c.PKCS11_PIN_FILE }
        : undefined,
    operatorToken: c.OPERATOR_TOKEN,
  };
}

/** How the work is done: minting, which parts run in this process and in which threads, what is kept. */
function workSettings(c: Env) {
  return {
    relayerCount: c.RELAYER_COUNT,
    mintBatchSize: c.MINT_BATCH_SIZE,
    /**
     * While a burst of creates is being written in this process, the mints wait for it to pause, at most
     * this long between two batches (0: they never wait).
     */
    mintYieldMs: c.MINT_YIELD_MS,
    confirmations: c.CHAIN_CONFIRMATIONS,
    stuckSeconds: c.CHAIN_STUCK_SECONDS,
    /** The workers check a few records against the chain this often (src/services/verify/watch.ts); 0: never. */
    chainVerifyIntervalS: c.CHAIN_VERIFY_INTERVAL_SECONDS,
    /** At most this many records per background check. */
    chainVerifyBatch: c.CHAIN_VERIFY_BATCH,
    runWorkers: c.WORKERS,
    runApi: c.API,
    /**
     * `npm start` with both the API and the workers on runs the workers in a thread of their own, so
     * minting never takes CPU from the API's event loop (WORKER_THREAD=false keeps them on it).
     */
    workerThread: c.WORKER_THREAD,
    /** Nice value of the workers' thread (0..19): the API keeps the CPU when both want it. */
    workerNice: c.WORKER_NICE,
    /** POST /asset's creates are written in a thread of their own beside the API's event loop (src/boot/threads/creates-thread.ts). */
    createsThread: c.CREATES_THREAD,
    /** Events, webhook attempts, finished jobs and settled transactions' raw bytes are pruned after this many days (0: never). */
    retentionDays: c.RETENTION_DAYS,
    /** GET /asset/<uid> answers kept in memory while their asset is unchanged (0: always read the database). */
    assetCacheEntries: c.ASSET_CACHE_ENTRIES,
    /** ...and at most this many MB of them (0: no bound but the count): a few large answers must not hold what 10,000 small ones would. */
    assetCacheMb: c.ASSET_CACHE_MB,
    /** Creates are refused (503 `overloaded`) while the process's resident memory is over this (0: never). */
    memoryLimitMb: c.MEMORY_LIMIT_MB,
    /** Creates are refused (503 `overloaded`) while the bodies of creates not answered yet hold more than this (0: never). */
    createsQueueMb: c.CREATES_QUEUE_MB,
    demoApp: c.DEMO_APP,
  };
}

/** What the service fetches and where it publishes files. */
function outboundSettings(c: Env) {
  return {
    /** Lifts the SSRF guard of outbound requests (webhooks, image fetches): development and tests only. */
    outboundAllowPrivate: c.OUTBOUND_ALLOW_PRIVATE,
    /** Largest image fetched for store_image_on_ipfs (bytes). */
    imageMaxBytes: c.IMAGE_MAX_BYTES,
    /** Kubo RPC base URL (e.g. http://127.0.0.1:5001): production Apps' files are also added and pinned there. */
    ipfsApiUrl: c.IPFS_API_URL === undefined ? undefined : trimSlashes(c.IPFS_API_URL),
    /** IPFS Pinning Service API base URL and its bearer token: production Apps' CIDs are pinned there. */
    pinningServiceUrl: c.PINNING_SERVICE_URL === undefined ? undefined : trimSlashes(c.PINNING_SERVICE_URL),
    pinningServiceToken: c.PINNING_SERVICE_TOKEN,
  };
}

/** What a client may ask of the API, and whose forwarded address is believed. */
function requestLimits(c: Env) {
  return {
    /** Requests per minute per API key on /v1; 0 = no limit. */
    rateLimit: c.RATE_LIMIT,
    /** Failed authentications per minute per client address on /v1; 0 = no limit. */
    authFailureLimit: c.RATE_LIMIT_AUTH_FAILURES,
    /** Wrong operator tokens per client address within 15 min before it is refused (429); 0 = no limit. */
    operatorAuthFailures: c.OPERATOR_AUTH_FAILURES,
    operatorAuthGlobalFailures: c.OPERATOR_AUTH_GLOBAL_FAILURES,
    /** Proxies whose X-Forwarded-For is believed (addresses, CIDRs); empty = the socket's peer address. */
    trustProxy: c.TRUST_PROXY ?? [],
  };
}

/**
 * The environment as the service sees it: checked, defaulted, then shaped into the config object. Config
 * (below) is inferred from this object, never written beside it: a field exists because it is built here
 * from checked variables, with the type they were checked to have. The groups keep the fields' order.
 */
export const configSchema = envSchema.transform((c, ctx) => {
  // One issue, named by the variable to change, as for a bad value.
  const refuse = (variable: string, message: string) => {
    ctx.issues.push({ code: 'custom', input: c, path: variable ? [variable] : [], message });
    return z.NEVER;
  };
  const conflict = conflictingSettings(c);
  if (conflict) return refuse(conflict.variable, conflict.message);
  const publicUrl = trimSlashes(c.PUBLIC_URL ?? `http://${c.HOST === '0.0.0.0' ? '127.0.0.1' : c.HOST}:${c.PORT}`);
  let chains: ChainSpec[];
  try {
    chains = chainsOf(c, publicUrl);
  } catch (err) {
    // Its message names the variable itself (`CHAINS[1].rpc: ...`).
    if (err instanceof ChainConfigError) return refuse('', err.message);
    throw err;
  }
  return {
    ...placeSettings(c, publicUrl),
    ...chainSettings(c, chains),
    ...secretSettings(c),
    logLevel: c.LOG_LEVEL,
    /** `pretty`: one readable line per entry (the default on a terminal); `json`: one JSON object per line. */
    logFormat: c.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json'),
    ...workSettings(c),
    ...outboundSettings(c),
    ...requestLimits(c),
    /** Per JSON-RPC call and provider, before the call goes to the chain's next provider (a CHAINS entry's `rpcTimeoutMs` overrides it). */
    rpcTimeoutMs: c.CHAIN_RPC_TIMEOUT_MS,
    /** Operator alerts (low relayer balance, a provider down, fees over the ceiling, a stuck transaction), signed with the secret. */
    alertWebhookUrl: c.ALERT_WEBHOOK_URL,
    alertWebhookSecret: c.ALERT_WEBHOOK_SECRET,
  };
});

/** What the operator set, loaded once and frozen: no process changes it after loading (see Installation). */
export type Config = Readonly<z.output<typeof configSchema>>;

/**
 * The facts every process of an installation agrees on at its start (src/services/installation.ts
 * records them in the database): settled once, frozen, and carried on the context beside the config.
 */
export interface Installation {
  /** OPERATOR_TOKEN, else the one generated into DATA_DIR/operator.token; unset in the CLI. */
  readonly operatorToken: string | undefined;
  /** The installation's public URL: PUBLIC_URL, else the one recorded by the process that started first. */
  readonly publicUrl: string;
  /** Every chain served, the default one first; explorer links derived from the public URL follow the agreed one. */
  readonly chains: readonly ChainSpec[];
  /** The chain every record was on before there were several (its jobs keep their plain kinds). */
  readonly homeChainId: number;
}

/** The installation as this process's settings state it, with what the start settled in place of theirs. */
export function installationOf(config: Config, settled: Partial<Installation> = {}): Installation {
  return deepFreeze({
    operatorToken: settled.operatorToken ?? config.operatorToken,
    publicUrl: settled.publicUrl ?? config.publicUrl,
    chains: settled.chains ?? config.chains,
    homeChainId: settled.homeChainId ?? config.chains[0].id,
  });
}

/** The default chain (the embedded one, else the first external one): for what names no chain. */
export function defaultChain(ctx: { installation: Installation }): ChainSpec {
  return ctx.installation.chains[0];
}

/**
 * Freezes a config (and everything in it). Loading freezes; a config that crossed to a thread (a copy)
 * is frozen again on arrival.
 */
export function freezeConfig<T extends object>(config: T): Readonly<T> {
  return deepFreeze(config);
}

/** The same settings for a part of the service with another role (the workers' thread: no API). */
export function withRole(config: Config, role: Partial<Pick<Config, 'runApi' | 'runWorkers' | 'demoApp'>>): Config {
  return deepFreeze({ ...config, ...role });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset: `FOO= npm start` should not be an error.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => (i.path.length ? `  ${i.path.join('.')}: ${i.message}` : `  ${i.message}`));
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return deepFreeze(parsed.data);
}
