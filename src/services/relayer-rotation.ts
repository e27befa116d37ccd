// `mintworks keys rotate-relayers`: new relayers in, the old ones retired once their transactions are
// final, while the service runs (docs/custody.md, Rotating the relayers). Starting one is a database
// transaction: the new relayers (next unused HD indices, or new key pairs generated in the HSM) are
// recorded as `pending`, the rotation row and its audit entry are written and the chain's workers are
// given the job that carries it out (src/services/chain/relayer-rotation-job.ts). Whoever runs the
// command then follows the row's progress; it can stop following and come back (`--resume`).
import type { PublicClient } from 'viem';
import type { Ctx } from './context.js';
import type { Selectable } from 'kysely';
import type { RelayerRotationTable } from '../store/schema.js';
import { isUniqueViolation } from '../store/db.js';
import { queueOn } from '../jobs/queue.js';
import { ROTATE_JOB } from '../jobs/kinds.js';
import { recordAudit, type Actor } from './audit.js';
import { relayerRows } from '../chain/relayer-set.js';
import { nextRelayerIndices } from '../domain/relayer-rotation.js';
import { LOW_BALANCE_WEI } from '../domain/chain-funding.js';

export type RotationRow = Selectable<RelayerRotationTable>;

export interface RotationView {
  id: number;
  chain_id: number;
  phase: RotationRow['phase'];
  new_relayers: string[];
  old_relayers: string[];
  /** What the rotation does or waits for now. */
  progress: string;
  created_at: string;
  switched_at: string | null;
  finished_at: string | null;
}

/** Why a rotation cannot start; the CLI exits 2 with it. */
export class RotationRefused extends Error {}

export function rotationView(r: RotationRow): RotationView {
  const iso = (t: number | null) => (t === null ? null : new Date(Number(t)).toISOString());
  return {
    id: Number(r.id),
    chain_id: Number(r.chain_id),
    phase: r.phase,
    new_relayers: JSON.parse(r.new_relayers) as string[],
    old_relayers: JSON.parse(r.old_relayers) as string[],
    progress: r.progress,
    created_at: iso(r.created_at)!,
    switched_at: iso(r.switched_at),
    finished_at: iso(r.finished_at),
  };
}

/** The unfinished rotation of a chain, if there is one. */
export async function unfinishedRotation(ctx: Pick<Ctx, 'db'>, chainId: number): Promise<RotationRow | undefined> {
  return ctx.db.selectFrom('relayer_rotations').selectAll().where('chain_id', '=', chainId).where('finished_at', 'is', null).executeTakeFirst();
}

export async function rotationById(ctx: Pick<Ctx, 'db'>, id: number): Promise<RotationRow | undefined> {
  return ctx.db.selectFrom('relayer_rotations').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Starts a rotation of chain `chainId`'s relayers: `count` new ones (default: as many as are active).
 * `fundWei`: on an external chain, the deployer sends each new relayer this much (else the operator funds them).
 * `client`: the chain, to start the new accounts' nonces where the chain has them (0 for new keys).
 * Long: one transaction: the rotation, its new relayers and its job are written together.
 */
export async function startRelayerRotation(
  ctx: Ctx,
  chainId: number,
  opts: { count?: number; actor: Actor; client?: PublicClient; fundWei?: bigint },
): Promise<RotationView> {
  const refuse = (r: RotationRow) =>
    new RotationRefused(
      `chain ${chainId} has a relayer rotation that is not finished (rotation ${r.id}, ${r.phase}: ${r.progress || 'starting'}); ` +
        `follow it with \`mintworks keys rotate-relayers --chain ${chainId} --resume\`, a second one starts once it is done`,
    );
  const open = await unfinishedRotation(ctx, chainId);
  if (open) throw refuse(open);
  const rows = await relayerRows(ctx.db, chainId);
  const old = rows.filter((r) => r.state === 'active').map((r) => r.address.toLowerCase());
  if (old.length === 0) throw new RotationRefused(`chain ${chainId} has no relayers yet: start the service once so that it sets the chain up`);
  const count = opts.count ?? old.length;
  if (opts.fundWei !== undefined && opts.fundWei < LOW_BALANCE_WEI)
    throw new RotationRefused(`funding each new relayer with ${opts.fundWei} wei is under the ${LOW_BALANCE_WEI} wei a relayer needs at least`);
  // Indices are the installation's, not the chain's: a key retired on one chain is never brought back on another.
  const used = (await ctx.db.selectFrom('relayers').select('idx').where('idx', '>=', 0).execute()).map((r) => Number(r.idx));
  const labelled = (await ctx.db.selectFrom('custody_keys').select('label').where('role', '=', 'relayer').execute()).map((r) => r.label);
  const indices = nextRelayerIndices(used, labelled, count);
  // The keys first (an HSM generates them: outside the database transaction, recorded in custody_keys).
  const fresh: { index: number; address: string; nonce: number }[] = [];
  for (const index of indices) {
    const signer = await ctx.keys.relayerAt(index);
    const address = signer.address.toLowerCase();
    const nonce = opts.client ? await opts.client.getTransactionCount({ address: signer.address, blockTag: 'pending' }).catch(() => 0) : 0;
    fresh.push({ index, address, nonce });
  }
  const now = Date.now();
  try {
    const row = await ctx.db.transaction().execute(async (tx) => {
      const r = await tx
        .insertInto('relayer_rotations')
        .values({
          chain_id: chainId,
          phase: 'granting',
          new_relayers: JSON.stringify(fresh.map((f) => f.address)),
          old_relayers: JSON.stringify(old),
          progress: 'waiting for every process to learn of the new relayers',
          fund_wei: opts.fundWei === undefined ? null : opts.fundWei.toString(),
          actor: opts.actor.kind,
          actor_detail: opts.actor.detail ?? null,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      for (const f of fresh)
        await tx
          .insertInto('relayers')
          .values({ address: f.address, chain_id: chainId, idx: f.index, next_nonce: f.nonce, updated_at: now, state: 'pending' })
          .execute();
      await recordAudit(tx, opts.actor, {
        action: 'relayers.rotation_started',
        chain_id: chainId,
        details: { rotation_id: Number(r.id), new_relayers: fresh.map((f) => f.address), old_relayers: old, indices },
      });
      await queueOn(ctx, chainId).enqueue(tx, { kind: ROTATE_JOB, ref: String(r.id), groupKey: `rotation:${r.id}`, maxAttempts: 1000 });
      return r;
    });
    return rotationView(row);
  } catch (err) {
    if (isUniqueViolation(err)) {
      const other = await unfinishedRotation(ctx, chainId);
      if (other) throw refuse(other);
    }
    throw err;
  }
}
