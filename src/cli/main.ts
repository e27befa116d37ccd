// `mintworks` — operate an installation from the shell, on the same DATA_DIR / DATABASE_URL as the
// service. Parsed by commander: `--help` on every command (exit 0), `--version`, unknown options,
// missing required ones and bad values exit 2 naming them. Every command prints a readable text by
// default, and exactly one JSON object on stdout with --json (errors too: {"error": "..."}).
import fs from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import pino from 'pino';
import { loadConfig, ConfigError, type Config } from '../config/config.js';
import { openCore } from '../boot/open-core.js';
import { buildContext } from '../boot/context.js';
import type { Ctx } from '../services/context.js';
import { createApp, listApps } from '../services/apps/registry.js';
import { rotateApiSecret } from '../services/apps/api-keys.js';
import { createCollection, getCollection, type NewCollection } from '../services/collections/collections.js';
import { updateCollection } from '../services/collections/info.js';
import { MAX_ROYALTY_BPS, type ChangeableOptions } from '../domain/collection-options.js';
import { collectionView } from '../services/views.js';
import { appCredentials, signAppToken } from '../services/apps/tokens.js';
import { ApiError } from '../util/errors.js';
import {
  clearable,
  collectionStandard,
  integer,
  reportUnknownOptionsFirst,
  requireApp,
  table,
  text,
  urlOption,
  UsageError,
  yesNo,
  type Output,
} from './args.js';
import { prettyDestination } from '../util/log-format.js';
import { webhookLog, webhookRedeliver, webhookSet, webhookShow } from './webhooks.js';
import { rewardCreate, rewardList, rewardWithdraw } from './rewards.js';
import { backup, restore } from './backup.js';
import { assertInstallation } from './installation.js';
import { chainCommand } from './chain.js';
import { DataDirInUseError } from '../boot/data-dir-lock.js';
import { configCommand } from './config-set.js';
import { addChainOpsCommands } from './chain-ops.js';
import { addChainVerifyCommand } from './chain-verify.js';
import { auditList, auditVerify, cliActor, keysMigrate, keysRotateMaster, keysRotateRelayers, walletExport } from './keys.js';
import type { Core } from '../boot/open-core.js';
import { recordAudit, type AuditEntry } from '../services/audit.js';

const version = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const argv = process.argv.slice(2);
const asJson = argv.includes('--json');
const TEN_YEARS = 10 * 365 * 24 * 3600;

function print(o: Output): void {
  process.stdout.write((asJson ? JSON.stringify(o.json) : o.text) + '\n');
}

function fail(message: string, code: number): never {
  if (asJson) process.stdout.write(JSON.stringify({ error: message }) + '\n');
  else process.stderr.write(message + '\n');
  process.exit(code);
}

/** Warnings only, to stderr: readable on a terminal, JSON otherwise (as the service's LOG_FORMAT). */
const cliLogger = () => (process.stderr.isTTY ? pino({ level: 'warn' }, prettyDestination(process.stderr)) : pino({ level: 'warn' }, pino.destination(2)));

/**
 * Runs a command on the installation's store and secrets (migrations applied), then closes it. A command
 * that only `reads` never creates an installation (DATA_DIR, keys, a database) where there is none.
 */
async function withCtx(fn: (ctx: Ctx, config: Config, core: Core) => Promise<Output>, reads = false): Promise<void> {
  const config = loadConfig();
  const log = cliLogger();
  if (reads) await assertInstallation(config);
  const core = await openCore(config, log, { existing: reads });
  const ctx = buildContext({ config, log, core });
  try {
    print(await fn(ctx, config, core));
  } finally {
    await core.store.close();
  }
}

/** Records a CLI act in the audit log of the installation. */
async function audited(config: Config, entry: AuditEntry): Promise<void> {
  const core = await openCore(config, cliLogger());
  try {
    await recordAudit(core.store.db, cliActor(), entry);
  } finally {
    await core.store.close();
  }
}

const program = new Command('mintworks')
  .description(
    'Operate a Mintworks installation: uses the same environment as the service (DATA_DIR, DATABASE_URL, MASTER_KEY or KEY_CUSTODY=pkcs11 with PKCS11_*, CHAIN_ID).',
  )
  .version(version, '-V, --version', 'print the version')
  .helpCommand('help [command]', 'help for a command')
  .showSuggestionAfterError(true)
  .exitOverride();
// Errors are printed once, by fail() below (as JSON with --json); help goes to stdout (or stderr for a usage error).
program.configureOutput({
  writeErr: (s) => void (asJson ? undefined : process.stderr.write(s)),
  writeOut: (s) => void process.stdout.write(s),
  outputError: () => {},
});

/** A command that does something: --json, exit-code handling and the common shape. */
function leaf(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option('--json', 'print one JSON object (the {…} after -> above) instead of text')
    .exitOverride()
    .allowExcessArguments(false);
}

const appOption = () => new Option('--app <uid>', 'the App (see: mintworks app list)').makeOptionMandatory();
const chainOption = () =>
  new Option('--chain <id>', 'chain id the contract is deployed on (default: the embedded chain, else the first of CHAINS)').argParser(
    integer(1, Number.MAX_SAFE_INTEGER),
  );

// ------------------------------------------------------------------------------------------ apps
const app = program.command('app').description('Apps: create, list, rotate the API secret').exitOverride();
leaf(app, 'create', 'create an App -> {uid, api_key, api_secret} (the secret is shown once)')
  .requiredOption('--name <name>', "the App's name", text(100))
  .addOption(
    new Option('--environment <env>', 'development: metadata served by this service; production: on IPFS')
      .choices(['development', 'production'])
      .makeOptionMandatory(),
  )
  .action((o) =>
    withCtx(async (ctx) => {
      const r = await createApp(ctx, o.name, o.environment, cliActor());
      return {
        json: r,
        text: `App ${r.uid} created (${o.environment}).\n  api_key    ${r.api_key}\n  api_secret ${r.api_secret}   (shown once; keep it safe)`,
      };
    }),
  );
leaf(app, 'list', 'list Apps').action(() =>
  withCtx(async (ctx) => {
    const apps = (await listApps(ctx)).map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at }));
    return {
      json: { apps },
      text: table(
        apps,
        [
          ['uid', 'uid'],
          ['environment', 'environment'],
          ['created_at', 'created'],
          ['name', 'name'],
        ],
        '(no Apps)',
      ),
    };
  }, true),
);
leaf(app, 'rotate-secret', "new API secret for the App's key, effective at once -> {uid, api_key, api_secret}")
  .addOption(appOption())
  .action((o) =>
    withCtx(async (ctx) => {
      const r = await rotateApiSecret(ctx, await requireApp(ctx.db, o.app), cliActor());
      return {
        json: r,
        text: `API secret of App ${r.uid} rotated: the old one no longer works (other API processes: within 30 s).\n  api_key    ${r.api_key}\n  api_secret ${r.api_secret}   (shown once; keep it safe)`,
      };
    }),
  );

// ----------------------------------------------------------------------------------- collections
const collection = program.command('collection').description('collections (ERC-721 assets, ERC-1155 items): create, update, list').exitOverride();
leaf(collection, 'create', 'create a collection (deployed by the running service) -> {uid}')
  .addOption(appOption())
  .requiredOption('--name <name>', 'collection name', text(100))
  .requiredOption('--symbol <symbol>', 'token symbol: 1-16 letters or digits', text(16))
  .option('--editable [yes|no]', "assets' metadata can be replaced (PUT /v1/asset/{uid}); --editable alone means yes", yesNo, false)
  .option('--soulbound [yes|no]', 'ERC-5192: tokens can be burned, never transferred (fixed); --soulbound alone means yes', yesNo, false)
  .option('--royalty-receiver <address>', 'ERC-2981 royalty receiver (with --royalty-bps)', text(100))
  .option('--royalty-bps <n>', `ERC-2981 royalty in basis points, 0-${MAX_ROYALTY_BPS} (250 = 2.5 %)`, integer(0, MAX_ROYALTY_BPS))
  .option('--description <text>', 'description (in the contract document, ERC-7572)', text(2000))
  .option('--image-url <url>', 'image of the contract document', text(2000))
  .option('--external-url <url>', 'external link of the contract document', text(2000))
  .option('--standard <standard>', 'ERC721 (unique assets, the default) or ERC1155 (stackable items, /v1/item)', collectionStandard, 'ERC721')
  .addOption(chainOption())
  .action((o) =>
    withCtx(async (ctx, _config) => {
      const input: NewCollection = {
        name: o.name,
        symbol: o.symbol,
        editable: o.editable,
        description: o.description ?? null,
        chain_id: o.chain ?? null,
        soulbound: o.soulbound,
        royalty_receiver: o.royaltyReceiver ?? null,
        royalty_bps: o.royaltyBps ?? null,
        image_url: urlOption('--image-url', o.imageUrl),
        external_url: urlOption('--external-url', o.externalUrl),
        standard: o.standard,
      };
      const r = await createCollection(ctx, await requireApp(ctx.db, o.app), input, cliActor());
      return { json: r, text: `Collection ${r.uid} created; the running service deploys it (status deploying -> deployed).` };
    }),
  );
leaf(collection, 'update', "change a collection's royalty or contract document (the running service sends it to the contract) -> Collection")
  .addOption(appOption())
  .requiredOption('--collection <uid>', 'the collection')
  .option('--royalty-receiver <address>', 'ERC-2981 royalty receiver', text(100))
  .option('--royalty-bps <n>', `ERC-2981 royalty in basis points, 0-${MAX_ROYALTY_BPS}`, integer(0, MAX_ROYALTY_BPS))
  .option('--description <text>', 'description', text(2000))
  .option('--image-url <url>', 'image of the contract document', text(2000))
  .option('--external-url <url>', 'external link of the contract document', text(2000))
  .option('--clear <fields>', 'comma-separated: royalty, description, image-url, external-url', clearable)
  .action((o) =>
    withCtx(async (ctx) => {
      const clear: string[] = o.clear ?? [];
      const change: ChangeableOptions = {
        ...(clear.includes('royalty') ? { royalty_receiver: null, royalty_bps: null } : {}),
        ...(clear.includes('description') ? { description: null } : {}),
        ...(clear.includes('image-url') ? { image_url: null } : {}),
        ...(clear.includes('external-url') ? { external_url: null } : {}),
        ...(o.royaltyReceiver !== undefined ? { royalty_receiver: o.royaltyReceiver } : {}),
        ...(o.royaltyBps !== undefined ? { royalty_bps: o.royaltyBps } : {}),
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...(o.imageUrl !== undefined ? { image_url: urlOption('--image-url', o.imageUrl) } : {}),
        ...(o.externalUrl !== undefined ? { external_url: urlOption('--external-url', o.externalUrl) } : {}),
      };
      if (Object.keys(change).length === 0)
        throw new UsageError('nothing to change: give --royalty-receiver/--royalty-bps, --description, --image-url, --external-url or --clear');
      const app = await requireApp(ctx.db, o.app);
      await updateCollection(ctx, app, o.collection, change, cliActor());
      const c = await getCollection(ctx, app, o.collection);
      return {
        json: c,
        text: `Collection ${c.uid} updated; the running service sends the royalty and contract URI to its contract.\n  contract_uri ${c.contract_uri}`,
      };
    }),
  );
leaf(collection, 'list', 'collections of an App, newest first')
  .addOption(appOption())
  .action((o) =>
    withCtx(async (ctx) => {
      const uid = await requireApp(ctx.db, o.app);
      const rows = await ctx.db.selectFrom('collections').selectAll().where('app_uid', '=', uid).orderBy('created_at', 'desc').execute();
      const collections = rows.map((c) => collectionView(c, ctx.installation));
      const text = table(
        collections,
        [
          ['uid', 'uid'],
          ['status', 'status'],
          ['type', 'type'],
          ['symbol', 'symbol'],
          ['editable_assets', 'editable'],
          ['contract_address', 'contract'],
          ['name', 'name'],
        ],
        '(no collections)',
      );
      return { json: { collections }, text };
    }, true),
  );

// ----------------------------------------------------------------------------------------- token
leaf(program, 'token', 'a bearer token for curl (HS256 with the API secret): prints the token; --json -> {token, api_key}')
  .addOption(appOption())
  .option('--expires <seconds>', 'lifetime in seconds (default: no expiry)', integer(1, TEN_YEARS))
  .action((o) =>
    withCtx(async (ctx) => {
      const uid = await requireApp(ctx.db, o.app);
      const creds = await appCredentials(ctx.db, ctx.box, uid);
      if (!creds) throw new UsageError(`App ${uid} has no active API key`);
      const token = await signAppToken(creds.api_key, creds.api_secret, o.expires);
      await recordAudit(ctx.db, cliActor(), { action: 'app.token_issued', app_uid: uid, details: { expires_in_seconds: o.expires ?? null } });
      return { json: { token, api_key: creds.api_key }, text: token };
    }, true),
  );

// -------------------------------------------------------------------------------------- webhooks
const webhook = program.command('webhook').description("an App's webhook: configure, inspect deliveries, redeliver").exitOverride();
leaf(webhook, 'set', "create or change the App's webhook -> {secret, ...}")
  .addOption(appOption())
  .option('--url <url>', 'where events are POSTed (required when creating)')
  .option('--events <list>', 'comma-separated event types, or all')
  .option('--rotate-secret', 'new signing secret; the old one signs too for 24 h')
  .option('--disable', 'stop sending (set again to re-enable)')
  .action((o) => withCtx((ctx) => webhookSet(ctx, o)));
leaf(webhook, 'show', "the App's webhook configuration")
  .addOption(appOption())
  .action((o) => withCtx((ctx) => webhookShow(ctx, o), true));
leaf(webhook, 'log', 'delivery state and attempt log, newest first')
  .addOption(appOption())
  .option('--event <id>', 'one event: its delivery and every attempt')
  .option('--limit <n>', 'entries (1-1000)', integer(1, 1000), 50)
  .action((o) => withCtx((ctx) => webhookLog(ctx, o), true));
leaf(webhook, 'redeliver', 'send an event again now')
  .addOption(appOption())
  .requiredOption('--event <id>', 'the event id')
  .action((o) => withCtx((ctx) => webhookRedeliver(ctx, o)));

// --------------------------------------------------------------------------------------- rewards
const reward = program.command('reward').description('ERC-20 rewards: create, list, withdraw').exitOverride();
leaf(reward, 'create', 'create an ERC-20 reward (deployed by the running service) -> {uid}')
  .addOption(appOption())
  .requiredOption('--name <name>', 'reward name', text(100))
  .requiredOption('--token-name <name>', 'ERC-20 name', text(100))
  .requiredOption('--token-symbol <symbol>', 'ERC-20 symbol: 1-16 letters or digits', text(16))
  .requiredOption('--supply <amount>', 'total supply, a decimal with up to 18 decimals')
  .option('--withdraw-receiver <address>', 'where `reward withdraw` sends what is left')
  .option('--description <text>', 'description', text(2000))
  .addOption(chainOption())
  .action((o) =>
    withCtx(async (ctx, _config) => {
      return rewardCreate(ctx, o);
    }),
  );
leaf(reward, 'withdraw', 'send what the reward still holds to its withdraw receiver')
  .addOption(appOption())
  .requiredOption('--reward <uid>', 'the reward')
  .action((o) => withCtx((ctx) => rewardWithdraw(ctx, o)));
leaf(reward, 'list', 'rewards of an App, with budget and withdrawal state')
  .addOption(appOption())
  .action((o) => withCtx((ctx) => rewardList(ctx, o), true));

// ------------------------------------------------------------------------------- custody, audit
const wallet = program.command('wallet').description("users' wallets: export a wallet key to its user").exitOverride();
leaf(wallet, 'export', 'the wallet key of a user, sealed (HPKE) to a recipient X25519 public key -> {address, enc, ciphertext}')
  .addOption(appOption())
  .requiredOption('--user <uid>', 'the user')
  .requiredOption('--recipient-key <file>', "the recipient's raw X25519 public key: 32 bytes, or their base64url text")
  .option('--chain <id>', "the chain of the wallet (default: the user's first wallet)", integer(1, Number.MAX_SAFE_INTEGER))
  .action((o) => withCtx((ctx) => walletExport(ctx, o)));
const audit = leaf(program, 'audit', 'the audit log of operator acts, newest first; `audit verify` checks its hash chain')
  .option('--action <action>', 'one action only (e.g. wallet.exported, master_key.rotated)')
  .option('--app <uid>', 'one App only')
  .option('--limit <n>', 'entries (1-1000)', integer(1, 1000), 50)
  .action((o) => withCtx((ctx) => auditList(ctx, o), true));
leaf(audit, 'verify', 'check the audit hash chain from its first entry; exit 1 naming the first broken or missing entry')
  .option('--head <seq:hash>', 'a head printed earlier (and kept elsewhere): it must still be in the chain')
  .action((o) =>
    withCtx(async (ctx) => {
      const r = await auditVerify(ctx, o);
      if (r.broken) process.exitCode = 1;
      return r;
    }, true),
  );
const keys = program.command('keys').description('key custody: migrate to an HSM, rotate the master key, rotate the relayers').exitOverride();
leaf(keys, 'rotate-master', 're-seal every secret under a new master key (the service may run: it picks the key up)').action(() =>
  withCtx((_ctx, _config, core) => keysRotateMaster(core, { quiet: asJson })),
);
leaf(keys, 'rotate-relayers', 'new relayers for a chain; the old ones retire once their transactions are final (the service runs it)')
  .addOption(new Option('--chain <id>', 'the chain').argParser(integer(1, Number.MAX_SAFE_INTEGER)).makeOptionMandatory())
  .option('--count <n>', 'how many new relayers (default: as many as are active)', integer(1, 100))
  .option('--fund <amount>', 'on an external chain: the deployer sends each new relayer this much native currency (default: you fund them)')
  .option('--resume', 'follow the unfinished rotation of the chain instead of starting one')
  .option('--no-wait', 'start it and return, without following it to the end')
  .action((o) => withCtx((ctx, config) => keysRotateRelayers(ctx, config, { ...o, quiet: asJson })));
leaf(keys, 'migrate', 'move the master key of a local installation into the HSM (the service must be stopped)')
  .addOption(new Option('--to <custody>', 'the target custody').choices(['pkcs11']).makeOptionMandatory())
  .action((o) => withCtx((_ctx, config, core) => keysMigrate(core, config, o)));

// -------------------------------------------------------------------------------- backup, restore
leaf(program, 'backup', 'snapshot database, keys, chain state and files into a new directory (the service may run)')
  .option('--out <dir>', 'the directory to create (default: ./mintworks-backup-<time>)')
  .action(async (o) => {
    const config = loadConfig();
    await assertInstallation(config);
    const r = await backup(config, o);
    await audited(config, { action: 'backup.created', details: { directory: (r.json as { directory: string }).directory } });
    print(r);
  });
leaf(program, 'restore', 'put a backup back into DATA_DIR (the service must be stopped)')
  .requiredOption('--from <dir>', 'a directory written by mintworks backup')
  .option('--force', 'move what DATA_DIR holds aside (into DATA_DIR/pre-restore-<time>) instead of refusing')
  .action(async (o) => {
    const config = loadConfig();
    const r = await restore(config, o);
    // On PostgreSQL the database itself is restored by pg_restore (printed above), by hand: its audit log
    // is the dump's, and this command (which restores the files only) does not write to it.
    if (!config.databaseUrl?.startsWith('postgres')) {
      // The restored database must open with the restored (or given) master key: check it now, not at start.
      const core = await openCore(config, cliLogger()).catch((err) => {
        throw new Error(`restored, but the database does not open with this master key: ${(err as Error).message}`);
      });
      try {
        await recordAudit(core.store.db, cliActor(), { action: 'backup.restored', details: { from: (r.json as { directory: string }).directory } });
      } finally {
        await core.store.close();
      }
    }
    print(r);
  });

// ----------------------------------------------------------------------------- chain, config
// One `chain` group: a development chain of its own and funding (chain.ts), the operator's tools (chain-ops.ts).
const chainGroup = chainCommand({ leaf, withCtx, print }).description(
  'the chains: a development chain of its own, funding, status, unconfirmed transactions, cancel, resync, verify',
);
addChainOpsCommands(chainGroup, { leaf, withCtx });
addChainVerifyCommand(chainGroup, { leaf, withCtx });
program.addCommand(chainGroup);
program.addCommand(configCommand({ leaf, withCtx }));

reportUnknownOptionsFirst(program);
program.addHelpText('after', '\nRun `mintworks <command> --help` (or `mintworks <command> <subcommand> --help`) for its options.');

try {
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    process.exit(2);
  }
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end here too: they succeeded. A group without its command printed its help.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') process.exit(0);
    fail(err.code === 'commander.help' ? 'a command is needed (see the list above)' : err.message.replace(/^error: /, ''), 2);
  }
  if (err instanceof UsageError || err instanceof ConfigError || err instanceof DataDirInUseError) fail(err.message, 2);
  if (err instanceof ApiError) fail(err.message, 1);
  fail(`error: ${(err as Error).message}`, 1);
}
