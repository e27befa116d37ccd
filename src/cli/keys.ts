// `mintworks wallet export`, `mintworks audit` and `mintworks keys …` (docs/custody.md).
import fs from 'node:fs';
import os from 'node:os';
import type { Config } from '../config.js';
import type { Ctx } from '../services/context.js';
import type { Core } from '../boot/open-core.js';
import { exportWallet } from '../services/wallet-export.js';
import { listAudit, recordAudit, type Actor } from '../services/audit.js';
import { rotateMasterKey } from '../custody/rotation.js';
import { migrateToPkcs11 } from '../custody/migrate.js';
import { openHsm } from '../custody/custody.js';
import { requireApp, table, UsageError, type Output } from './args.js';

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
