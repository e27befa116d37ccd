// Starts a real Mintworks (HTTP + workers + embedded anvil + SQLite or PostgreSQL) once per test file.
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { ApiClient, freePort, freshPostgres, tempDir, waitFor } from './env.js';

export interface TestService {
  svc: Service;
  base: string;
  dataDir: string;
  newApp(env?: 'development' | 'production'): Promise<{ uid: string; api: ApiClient; apiKey: string; apiSecret: string }>;
  newCollection(appUid: string, editable?: boolean): Promise<string>;
  stop(): Promise<void>;
}

export interface TestServiceOptions {
  /** Called once the service runs and before it must be ready (an external chain funds its accounts here). */
  beforeReady?(svc: Service): Promise<void>;
}

export async function startTestService(db: 'sqlite' | 'postgres', extraEnv: Record<string, string> = {}, opts: TestServiceOptions = {}): Promise<TestService> {
  const dataDir = tempDir();
  const pgdb = db === 'postgres' ? await freshPostgres() : null;
  const config = loadConfig({
    PORT: String(await freePort()), // a real port: PUBLIC_URL (token metadata URIs) is derived from it
    DATA_DIR: dataDir,
    ANVIL_PORT: String(await freePort()),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DEMO_APP: 'false',
    // The service runs inside the test process, beside the runner and other services: the process's
    // memory is not this service's, so creates are not refused for it (a test that wants it says so).
    MEMORY_LIMIT_MB: '0',
    ...(pgdb ? { DATABASE_URL: pgdb.url } : {}),
    ...extraEnv,
  });
  const svc = await startService(config);
  if (opts.beforeReady) {
    await opts.beforeReady(svc);
    await waitFor('every chain ready', async () => svc.runtimes.every((rt) => rt.ready), 60_000);
  }
  const base = `${svc.url}/v1`;
  return {
    svc,
    base,
    dataDir,
    async newApp(env = 'development') {
      const app = await createApp(svc.ctx, `Test ${Math.random().toString(36).slice(2, 8)}`, env);
      const token = await signAppToken(app.api_key, app.api_secret);
      return { uid: app.uid, api: new ApiClient(base, app.api_key, token), apiKey: app.api_key, apiSecret: app.api_secret };
    },
    async newCollection(appUid, editable = true) {
      const { uid } = await createCollection(svc.ctx, appUid, { name: `Coll ${uid6()}`, symbol: 'TST', editable });
      await waitFor(
        'collection deployed',
        async () => (await svc.ctx.db.selectFrom('collections').select('status').where('uid', '=', uid).executeTakeFirst())?.status === 'deployed',
        60_000,
      );
      return uid;
    },
    async stop() {
      await svc.stop();
      await pgdb?.drop();
    },
  };
}

const uid6 = () => Math.random().toString(36).slice(2, 8);

/** 100M of the native currency: the service's accounts never run out in a test. */
export const TEST_FUNDS = 10n ** 26n;

/**
 * The service on an external development chain (anvil or Hardhat's node, maybe behind a proxy): the
 * embedded chain off, the chain served through CHAINS, its deployer and relayers funded on the node.
 */
export async function startOnExternalChain(
  db: 'sqlite' | 'postgres',
  chain: { id: number; name: string; rpc: string | string[]; rpcTimeoutMs?: number },
  fund: (address: string, wei: bigint) => Promise<void>,
  extraEnv: Record<string, string> = {},
): Promise<TestService> {
  return startTestService(
    db,
    { EMBEDDED_CHAIN: 'false', CHAINS: JSON.stringify([chain]), ...extraEnv },
    {
      async beforeReady(svc) {
        for (const a of [svc.ctx.keys.deployer(), ...svc.runtimes[0].sender.relayers]) await fund(a.address, TEST_FUNDS);
      },
    },
  );
}
