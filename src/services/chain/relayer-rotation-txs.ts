// The transactions of a relayer rotation (src/services/chain/relayer-rotation-job.ts), each recorded
// through the chain pipeline under a reference naming the rotation, the action, the contract (or the
// account funded) and the account: a step run again finds what was recorded and never sends it twice.
import type { Address, Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import { ROTATION_TX, type RotationAction } from '../../chain/outcomes.js';
import type { ChainSigner } from '../../chain/signer.js';
import { pairState } from '../../domain/relayer-rotation.js';
import { lockForUpdate } from '../../store/locks.js';

const refOf = (rotationId: number, action: RotationAction, contract: string, account: string) =>
  `rotation:${rotationId}:${action}:${contract.toLowerCase()}:${account.toLowerCase()}`;

/** Where one change stands: from its recorded transactions, else from what the contract says. */
export async function stateOf(ctx: ChainCtx, rotationId: number, action: RotationAction, contract: string, account: string, onChain: () => Promise<boolean>) {
  const rows = await ctx.db
    .selectFrom('chain_txs')
    .select(['handled', 'status'])
    .where('chain_id', '=', ctx.chain.id)
    .where('kind', '=', ROTATION_TX)
    .where('ref', '=', refOf(rotationId, action, contract, account))
    .execute();
  const recorded = rows.map((x) => ({ final: Number(x.handled) === 1, ok: x.status === 'mined' }));
  const settled = pairState(recorded, null);
  if (settled !== 'to_send') {
    if (settled === 'failed') throw new Error(`relayer rotation ${rotationId}: ${action} of ${account} on ${contract} failed ${recorded.length} times`);
    return settled;
  }
  const state = pairState(recorded, await onChain());
  if (state === 'failed') throw new Error(`relayer rotation ${rotationId}: ${action} of ${account} on ${contract} failed ${recorded.length} times`);
  return state;
}

/** Records one change through the chain pipeline (once: the reference is checked in the same transaction) and sends it. */
export async function send(
  ctx: ChainCtx,
  rotationId: number,
  action: RotationAction,
  contract: Address,
  account: string,
  signer: ChainSigner,
  data: Hex,
  value?: bigint,
): Promise<void> {
  const ref = refOf(rotationId, action, contract, account);
  const gas = await ctx.sender.client
    .estimateGas({ account: signer.address, to: contract, data, value })
    .then((g) => (g * 13n) / 10n)
    .catch(() => 120_000n);
  const row = await ctx.db.transaction().execute(async (tx) => {
    // The rotation's row locked: two workers stepping it at once (a lease run out) record one of each.
    await lockForUpdate(tx.selectFrom('relayer_rotations').select('id').where('id', '=', rotationId)).execute();
    const unfinished = await tx
      .selectFrom('chain_txs')
      .select('id')
      .where('chain_id', '=', ctx.chain.id)
      .where('kind', '=', ROTATION_TX)
      .where('ref', '=', ref)
      .where((eb) => eb.or([eb('handled', '=', 0), eb('status', '=', 'mined')]))
      .executeTakeFirst();
    if (unfinished) return null;
    return ctx.sender.record(tx, {
      kind: ROTATION_TX,
      ref,
      payload: { rotation_id: rotationId, action, contract: contract.toLowerCase(), account: account.toLowerCase() },
      to: contract,
      data,
      gas,
      signer,
      value,
      rotation: true,
    });
  });
  if (row) await ctx.sender.broadcast([row]);
}
