// `mintworks wallet export`, `mintworks audit` and `mintworks keys …` (docs/custody.md).
import fs from 'node:fs';
import { parseEther } from 'viem';
import os from 'node:os';
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import type { Core } from '../boot/open-core.js';
import { exportWallet } from '../services/wallet-export.js';
import { listAudit, recordAudit, verifyAudit, type Actor } from '../services/audit.js';
import { rotateMasterKey } from '../custody/rotation.js';
import { migrateToPkcs11 } from '../custody/migrate.js';
import { openHsm } from '../custody/custody.js';
import { requireApp, table, UsageError, type Output } from './args.js';
import { installationChain } from './installation-chain.js';
import { RotationRefused, rotationById, rotationView, startRelayerRotation, unfinishedRotation, type RotationView } from '../services/relayer-rotation.js';

/** The CLI's actor in the audit log: whoever runs it on the host. */
export const cliActor = (): Actor => ({ kind: 'cli', detail: os.userInfo().username });

/** A recipient key file: the raw 32 bytes, or their base64url text. */
export function readRecipientKey(file: string): string {
  let raw: Buffer;
  try {
    raw = fs.readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read --recipient-key ${file}: ${(err as Error).message}`);
  }
  return raw.length === 32 ? raw.toString('base64url') : raw.toString('utf8').trim();
}

export async function walletExport(ctx: Ctx, o: { app: string; user: string; recipientKey: string; chain?: number }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  const r = await exportWallet(ctx, app, o.user, { chain_id: o.chain ?? null, recipient_public_key: readRecipientKey(o.recipientKey) }, cliActor());
  return {
    json: r,
    text: `Wallet ${r.address} of user ${o.user} exported (HPKE, sealed to the recipient key).\n  enc         ${r.enc}\n  ciphertext  ${r.ciphertext}`,
  };
}

export async function auditList(ctx: Ctx, o: { action?: string; app?: string; limit: number }): Promise<Output> {
  const page = await listAudit(ctx, { action: o.action, app_uid: o.app }, { limit: o.limit });
  const rows = page.items.map((e) => ({
    ...e,
    on: [e.app_uid && `app ${e.app_uid}`, e.user_uid && `user ${e.user_uid}`, e.chain_id && `chain ${e.chain_id}`].filter(Boolean).join(', '),
    who: `${e.actor}${e.actor_detail ? ` (${e.actor_detail})` : ''}`,
  }));
  return {
    json: { entries: page.items },
    text: table(
      rows,
      [
        ['created_at', 'when'],
        ['who', 'who'],
        ['action', 'action'],
        ['on', 'on'],
      ],
      '(no audit entries)',
    ),
  };
}

export async function keysRotateMaster(core: Core, o: { quiet?: boolean }): Promise<Output> {
  const r = await rotateMasterKey(core.store.db, core.box, core.custody.wrapper, { progress: o.quiet ? undefined : (s) => process.stderr.write(`${s}\n`) });
  await recordAudit(core.store.db, cliActor(), {
    action: 'master_key.rotated',
    details: { key_id: r.key_id, previous_key_id: r.previous_key_id, resealed: r.resealed, custody: core.custody.kind },
  });
  return { json: r, text: `Master key rotated: ${r.previous_key_id} -> ${r.key_id}; ${r.resealed} secrets re-sealed.` };
}

export async function keysMigrate(core: Core, config: Config, o: { to: string }): Promise<Output> {
  if (o.to !== 'pkcs11') throw new UsageError('only --to pkcs11 is supported');
  if (core.custody.kind !== 'local') throw new UsageError('this installation already runs with KEY_CUSTODY=pkcs11');
  if (!config.pkcs11) throw new UsageError('set PKCS11_MODULE, PKCS11_TOKEN_LABEL and PKCS11_PIN (or PKCS11_PIN_FILE) for the target HSM');
  const hsm = openHsm(config);
  try {
    const r = await migrateToPkcs11(config, core.store.db, core.box, hsm);
    await recordAudit(core.store.db, cliActor(), {
      action: 'custody.migrated',
      details: { from: 'local', to: 'pkcs11', token: config.pkcs11.tokenLabel, key_id: r.key_id, resealed: r.resealed },
    });
    return {
      json: r,
      text: [
        `Custody migrated to the HSM (token "${config.pkcs11.tokenLabel}"): ${r.resealed} secrets re-sealed under master key ${r.key_id}${r.master_key_file_removed ? '; DATA_DIR/master.key removed' : ''}.`,
        ...r.next.map((n) => `  - ${n}`),
      ].join('\n'),
    };
  } finally {
    hsm.close();
  }
}

/**
 * `mintworks keys rotate-relayers --chain <id>`: starts a rotation (or, with --resume, follows the
 * unfinished one) and prints its progress until it is done; the running service's workers carry it out.
 */
export async function keysRotateRelayers(
  ctx: Ctx,
  config: Config,
  o: { chain: number; count?: number; fund?: string; resume?: boolean; wait: boolean; quiet?: boolean },
  opts: { pollMs?: number } = {},
): Promise<Output> {
  const spec = config.chains.find((c) => c.id === o.chain);
  if (!spec) throw new UsageError(`chain ${o.chain} is not one this installation serves (${config.chains.map((c) => c.id).join(', ')})`);
  const say = o.quiet ? () => {} : (line: string) => process.stderr.write(`${line}\n`);
  let rotation: RotationView;
  if (o.resume) {
    if (o.count !== undefined || o.fund !== undefined) throw new UsageError('--resume follows the unfinished rotation: it takes no --count or --fund');
    const open = await unfinishedRotation(ctx, o.chain);
    if (!open) throw new UsageError(`chain ${o.chain} has no unfinished relayer rotation to resume`);
    rotation = rotationView(open);
    say(`Following rotation ${rotation.id} of chain ${o.chain} (started ${rotation.created_at}).`);
  } else {
    let fundWei: bigint | undefined;
    if (o.fund !== undefined) {
      try {
        fundWei = parseEther(o.fund);
      } catch {
        throw new UsageError(`--fund ${o.fund} is not an amount`);
      }
    }
    try {
      rotation = await startRelayerRotation(ctx, o.chain, {
        count: o.count,
        fundWei,
        actor: cliActor(),
        client: (await installationChain(ctx, config, spec)).client,
      });
    } catch (err) {
      if (err instanceof RotationRefused) throw new UsageError(err.message);
      throw err;
    }
    say(
      `Rotation ${rotation.id} of chain ${o.chain} started: ${rotation.new_relayers.length} new relayer(s) ${rotation.new_relayers.join(', ')} replace ${rotation.old_relayers.join(', ')}.`,
    );
    say('The running service carries it out (its workers); this command follows it. Stopping it here stops nothing: resume with --resume.');
  }
  if (o.wait) {
    let said = '';
    for (;;) {
      const row = await rotationById(ctx, rotation.id);
      if (!row) throw new Error(`rotation ${rotation.id} is gone`);
      rotation = rotationView(row);
      const line = `  [${rotation.phase}] ${rotation.progress}`;
      if (line !== said) say(line);
      said = line;
      if (rotation.finished_at) break;
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }
  const text = rotation.finished_at
    ? `Rotation ${rotation.id} of chain ${o.chain} done: the relayers are ${rotation.new_relayers.join(', ')}; ${rotation.old_relayers.join(', ')} retired (their balances stay where they are).`
    : `Rotation ${rotation.id} of chain ${o.chain}: ${rotation.phase}, ${rotation.progress}. Follow it with: mintworks keys rotate-relayers --chain ${o.chain} --resume`;
  return { json: rotation, text };
}

/** `mintworks audit verify`: the chain from its first entry; `broken` set means exit 1. */
export async function auditVerify(ctx: Ctx, o: { head?: string }): Promise<Output & { broken: boolean }> {
  let expect: { seq: number; hash: string } | undefined;
  if (o.head !== undefined) {
    const m = /^(\d+):([0-9a-f]{64})$/.exec(o.head);
    if (!m) throw new UsageError(`--head ${o.head} is not <seq>:<sha-256 hex> (as audit verify prints it)`);
    expect = { seq: Number(m[1]), hash: m[2] };
  }
  const r = await verifyAudit(ctx, expect);
  const text = r.ok
    ? `Audit chain intact: ${r.entries} entries. Head ${r.head.seq}:${r.head.hash}`
    : `Audit chain BROKEN at entry ${r.broken!.seq}${r.broken!.uid ? ` (${r.broken!.uid})` : ''}: ${r.broken!.reason}. ${r.entries} entries before it hold.`;
  return { json: r, text, broken: !r.ok };
}
