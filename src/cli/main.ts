// `mintworks` — operate an installation from the shell, on the same DATA_DIR / DATABASE_URL as the
// service. Every command accepts --json and then prints exactly one JSON object on stdout.
import pino from 'pino';
import { loadConfig, ConfigError } from '../config.js';
import { openCore } from '../service.js';
import type { Ctx } from '../services/context.js';
import { createApp, getApp, listApps } from '../services/apps.js';
import { createCollection } from '../services/collections.js';
import { appCredentials, signAppToken } from '../services/tokens.js';
import { ApiError } from '../util/errors.js';
import { chainFlag, flag, parseArgs, UsageError, type Flags } from './args.js';
import { webhookCommand, WEBHOOK_USAGE } from './webhooks.js';
import { rewardCommand, REWARD_USAGE } from './rewards.js';

const USAGE = `mintworks <command> [options] [--json]

  app create --name N --environment development|production   create an App -> {uid, api_key, api_secret}
  app list                                                    list Apps
  collection create --app UID --name N --symbol S [--editable] [--description D] [--chain ID]
                                                              create a collection (deployed by the service) -> {uid}
  token --app UID [--expires SECONDS]                         print a bearer token for curl -> {token, api_key}
${WEBHOOK_USAGE}
${REWARD_USAGE}

Uses the same environment as the service (DATA_DIR, DATABASE_URL, MASTER_KEY).`;

const str = (flags: Flags, name: string, required = true) => flag(flags, name, required);

async function run(argv: string[]): Promise<{ json: unknown; text: string }> {
  const { words, flags } = parseArgs(argv);
  const cmd = words.join(' ');
  if (cmd === '' || flags.help) throw new UsageError(USAGE);
  const config = loadConfig();
  const log = pino({ level: 'warn' }, pino.destination(2));
  const core = await openCore(config, log);
  const ctx: Ctx = { config, db: core.store.db, dialect: core.store.dialect, queue: core.queue, box: core.box, log, keys: core.keys, homeChainId: core.homeChainId };
  try {
    const appOf = async () => {
      const uid = str(flags, 'app')!;
      const app = await getApp(ctx, uid);
      if (!app) throw new UsageError(`no App with uid ${uid} (see: mintworks app list)`);
      return app;
    };
    switch (cmd) {
      case 'app create': {
        const env = str(flags, 'environment', false) ?? 'development';
        if (env !== 'development' && env !== 'production') throw new UsageError('--environment must be development or production');
        const r = await createApp(ctx, str(flags, 'name')!, env);
        return { json: r, text: `App ${r.uid} created (${env}).\n  api_key    ${r.api_key}\n  api_secret ${r.api_secret}   (shown once; keep it safe)` };
      }
      case 'app list': {
        const apps = (await listApps(ctx)).map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at }));
        return { json: { apps }, text: apps.map((a) => `${a.uid}  ${a.environment.padEnd(11)}  ${a.name}`).join('\n') || '(no Apps)' };
      }
      case 'collection create': {
        const app = await appOf();
        const r = await createCollection(ctx, app.uid, {
          name: str(flags, 'name')!,
          symbol: str(flags, 'symbol')!,
          editable: flags.editable === true || flags.editable === 'true',
          description: str(flags, 'description', false) ?? null,
          chain_id: chainFlag(flags),
        });
        return { json: r, text: `Collection ${r.uid} created; the running service deploys it (status deploying -> deployed).` };
      }
      case 'token': {
        const app = await appOf();
        const creds = await appCredentials(ctx.db, ctx.box, app.uid);
        if (!creds) throw new UsageError(`App ${app.uid} has no active API key`);
        const expires = str(flags, 'expires', false);
        const token = await signAppToken(creds.api_key, creds.api_secret, expires ? Number(expires) : undefined);
        return { json: { token, api_key: creds.api_key }, text: token };
      }
      default:
        if (words[0] === 'webhook') return await webhookCommand(ctx, words, flags);
        if (words[0] === 'reward') return await rewardCommand(ctx, words, flags);
        throw new UsageError(`unknown command "${cmd}"\n\n${USAGE}`);
    }
  } finally {
    await core.store.close();
  }
}

const argv = process.argv.slice(2);
const asJson = argv.includes('--json');
run(argv.filter((a) => a !== '--json'))
  .then((r) => {
    process.stdout.write((asJson ? JSON.stringify(r.json) : r.text) + '\n');
  })
  .catch((err) => {
    const message = err instanceof ApiError ? err.message : err instanceof ConfigError || err instanceof UsageError ? err.message : `error: ${(err as Error).message}`;
    if (asJson) process.stdout.write(JSON.stringify({ error: message }) + '\n');
    else process.stderr.write(message + '\n');
    process.exit(err instanceof UsageError ? 2 : 1);
  });
