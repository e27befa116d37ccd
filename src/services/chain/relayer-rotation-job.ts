// Carrying a relayer rotation out (src/services/relayer-rotation.ts starts it), as a job of its chain
// that moves it a step at a time and comes back for the next step. Every transaction it sends is
// recorded through the chain pipeline (kind `relayers.rotation`) under a reference naming the rotation,
// the contract and the account, so a step run again (after a crash, by another worker) finds what was
// recorded and never sends it twice. The phases:
//   granting  once every process has read the new relayers (they are operators of contracts deployed
//             from then on) and they are funded: each contract of the chain that a relayer owns is
//             handed to the deployer, then the deployer makes every new relayer an operator of every
//             contract. When all of it is final, in one database transaction: the new relayers become
//             active, the old ones retiring.
//   draining  once every process has read the switch (no new work goes to the old relayers; the
//             database refuses it anyway): wait until the old relayers have no unfinal transaction.
//   revoking  the deployer revokes the old relayers on every contract; when final, they are retired.
import { encodeFunctionData, getAddress, parseAbi, type Address, type Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ROTATE_JOB } from '../../jobs/kinds.js';
import { COLLECTION_DEPLOY_TX, REWARD_DEPLOY_TX, type ROTATION_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { RELAYER_SET_PROPAGATION_MS } from '../../chain/relayer-set.js';
import { UNHANDLED } from '../../chain/unhandled.js';
import { LOW_BALANCE_WEI } from '../../domain/chain-funding.js';
import { send, stateOf } from './relayer-rotation-txs.js';
import { setDevBalance } from '../../chain/dev-funding.js';
import { nowIso } from '../../util/time.js';
import { recordAudit } from '../audit.js';
import { lockForUpdate } from '../../store/locks.js';
import type { RotationRow } from '../relayer-rotation.js';

const OPERATOR_ABI = parseAbi([
  'function owner() view returns (address)',
  'function isOperator(address) view returns (bool)',
  'function setOperator(address account, bool enabled)',
  'function transferOwnership(address newOwner)',
]);
/** How soon a step that waits for something looks again. */
const POLL_MS = 1000;
/** How soon a rotation waiting for funds on an external chain looks again. */
const FUNDING_POLL_MS = 5000;

/** How soon a step that failed (a node error, a change that reverted three times) is tried again. */
const STALLED_RETRY_MS = 10_000;

/** A step's verdict: run again after `ms`, or the rotation is finished. */
type Next = { ms: number } | 'finished';

export function relayerRotationJobHandler(ctx: ChainCtx, rt: ChainRuntime): JobHandler<typeof ROTATE_JOB> {
  return {
    kind: ROTATE_JOB,
    batchSize: 1,
    leaseMs: 120_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const rotation = await ctx.db.selectFrom('relayer_rotations').selectAll().where('id', '=', Number(job.ref)).executeTakeFirst();
        if (!rotation || rotation.finished_at !== null) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        // A chain that is not ready (down, out of funds) holds the rotation as it holds other work.
        let next: Next = { ms: 2000 };
        try {
          if (await rt.readyNow(1000)) next = await step(ctx, rotation);
        } catch (err) {
          // Said where the operator looks (the command's progress), and tried again.
          const message = (err as Error).message;
          ctx.log.warn({ rotation: rotation.id, err: message }, 'relayer rotation step failed, trying again');
          await setProgress(ctx, Number(rotation.id), `stalled, trying again every ${STALLED_RETRY_MS / 1000} s: ${message.slice(0, 500)}`);
          next = { ms: STALLED_RETRY_MS };
        }
        if (next === 'finished') await ctx.queue.complete(ctx.db, job.id);
        else await ctx.queue.defer(ctx.db, job, next.ms);
      }
    },
  };
}

/** A rotation's transaction became final: its job looks at once. */
export function rotationOutcome(ctx: ChainCtx): OutcomeHandler<typeof ROTATION_TX> {
  return async ({ payload, ok, reason }) =>
    async (tx) => {
      if (!ok)
        ctx.log.warn({ rotation: payload.rotation_id, action: payload.action, contract: payload.contract, reason }, 'relayer rotation transaction failed');
      await ctx.queue.wakeGroup(tx, ROTATE_JOB, `rotation:${payload.rotation_id}`);
      return () => ctx.queue.notify(ROTATE_JOB);
    };
}

async function setProgress(ctx: ChainCtx, id: number, progress: string): Promise<void> {
  await ctx.db.updateTable('relayer_rotations').set({ progress }).where('id', '=', id).where('progress', '!=', progress).execute();
}

// Long: one case per progress value of the rotation, read as one table.
async function step(ctx: ChainCtx, r: RotationRow): Promise<Next> {
  const id = Number(r.id);
  const fresh = JSON.parse(r.new_relayers) as string[];
  const old = JSON.parse(r.old_relayers) as string[];
  if (r.phase === 'granting') {
    const ready = Number(r.created_at) + RELAYER_SET_PROPAGATION_MS;
    if (Date.now() < ready) return { ms: ready - Date.now() };
    const unfunded = await fund(ctx, r, fresh);
    if (unfunded) {
      await setProgress(ctx, id, unfunded);
      return { ms: r.fund_wei === null ? FUNDING_POLL_MS : POLL_MS };
    }
    // Deployments recorded before every process knew the new relayers may not name them: wait for them.
    const earlyDeploys = await ctx.db
      .selectFrom('chain_txs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('chain_id', '=', ctx.chain.id)
      .where('kind', 'in', [COLLECTION_DEPLOY_TX, REWARD_DEPLOY_TX])
      .where('handled', '=', UNHANDLED)
      .where('created_at', '<', ready)
      .executeTakeFirstOrThrow();
    if (Number(earlyDeploys.n) > 0) {
      await setProgress(ctx, id, `waiting for ${earlyDeploys.n} contract deployment(s) recorded before the rotation`);
      return { ms: POLL_MS };
    }
    const tally = await ensureOperators(ctx, id, fresh, 'grant');
    await setProgress(ctx, id, `granting operator rights to ${fresh.length} new relayer(s): ${tally.done}/${tally.total} contracts done`);
    if (tally.done < tally.total) return { ms: POLL_MS };
    await ctx.db.transaction().execute(async (tx) => {
      const current = await lockForUpdate(tx.selectFrom('relayer_rotations').select('phase').where('id', '=', id)).executeTakeFirst();
      if (current?.phase !== 'granting') return; // another worker switched meanwhile
      await tx
        .updateTable('relayers')
        .set({ state: 'active', updated_at: Date.now() })
        .where('chain_id', '=', ctx.chain.id)
        .where('address', 'in', fresh)
        .execute();
      await tx
        .updateTable('relayers')
        .set({ state: 'retiring', updated_at: Date.now() })
        .where('chain_id', '=', ctx.chain.id)
        .where('address', 'in', old)
        .execute();
      await tx
        .updateTable('relayer_rotations')
        .set({ phase: 'draining', switched_at: Date.now(), progress: `granted on ${tally.total} contracts; new work goes to the new relayers` })
        .where('id', '=', id)
        .execute();
    });
    ctx.log.info({ rotation: id, relayers: fresh }, 'relayer rotation: the new relayers take the work');
    return { ms: RELAYER_SET_PROPAGATION_MS };
  }
  if (r.phase === 'draining') {
    const since = Number(r.switched_at) + RELAYER_SET_PROPAGATION_MS;
    if (Date.now() < since) return { ms: since - Date.now() };
    const left = await ctx.db
      .selectFrom('chain_txs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('chain_id', '=', ctx.chain.id)
      .where('from_address', 'in', old)
      .where('handled', '=', UNHANDLED)
      .executeTakeFirstOrThrow();
    if (Number(left.n) > 0) {
      await setProgress(ctx, id, `waiting for ${left.n} transaction(s) of the old relayers to be final`);
      return { ms: POLL_MS };
    }
    await ctx.db.updateTable('relayer_rotations').set({ phase: 'revoking', progress: 'revoking the old relayers' }).where('id', '=', id).execute();
    return { ms: 0 };
  }
  if (r.phase === 'revoking') {
    const tally = await ensureOperators(ctx, id, old, 'revoke');
    await setProgress(ctx, id, `revoking the old relayers: ${tally.done}/${tally.total} contracts done`);
    if (tally.done < tally.total) return { ms: POLL_MS };
    await retire(ctx, r, tally.total);
    ctx.log.info({ rotation: id, retired: old }, 'relayer rotation done: the old relayers are retired');
    return 'finished';
  }
  return 'finished';
}

/** The old relayers are retired, the rotation done: one database transaction, with its audit entry. */
async function retire(ctx: ChainCtx, r: RotationRow, contracts: number): Promise<void> {
  const id = Number(r.id);
  const fresh = JSON.parse(r.new_relayers) as string[];
  const old = JSON.parse(r.old_relayers) as string[];
  const tally = { total: contracts };
  await ctx.db.transaction().execute(async (tx) => {
    // Once, whichever worker gets here first (its row locked: another waits, then finds it done).
    const current = await lockForUpdate(tx.selectFrom('relayer_rotations').select('finished_at').where('id', '=', id)).executeTakeFirst();
    if (current?.finished_at != null) return;
    await tx
      .updateTable('relayers')
      .set({ state: 'retired', updated_at: Date.now() })
      .where('chain_id', '=', ctx.chain.id)
      .where('address', 'in', old)
      .execute();
    // An HSM key is retired once it is retired on every chain that had it (never deleted).
    const inUse = await tx.selectFrom('relayers').select('address').where('address', 'in', old).where('state', '!=', 'retired').execute();
    const done = old.filter((a) => !inUse.some((u) => u.address.toLowerCase() === a));
    if (done.length) await tx.updateTable('custody_keys').set({ retired_at: nowIso() }).where('address', 'in', done).where('retired_at', 'is', null).execute();
    await tx
      .updateTable('relayer_rotations')
      .set({ phase: 'done', finished_at: Date.now(), progress: `done: ${old.length} relayer(s) retired, revoked on ${tally.total} contracts` })
      .where('id', '=', id)
      .execute();
    await recordAudit(
      tx,
      { kind: r.actor as 'cli', detail: r.actor_detail },
      { action: 'relayers.retired', chain_id: ctx.chain.id, details: { rotation_id: id, retired: old, active: fresh, contracts: tally.total } },
    );
  });
}

/**
 * Funds the new relayers: on the embedded chain as the service funds its accounts; on an external chain
 * by a recorded transfer from the deployer when the rotation was given an amount, else by the operator.
 * Returns what the rotation waits for, or null once each holds at least LOW_BALANCE_WEI.
 */
async function fund(ctx: ChainCtx, r: RotationRow, relayers: string[]): Promise<string | null> {
  const short: Address[] = [];
  for (const a of relayers) {
    const balance = await ctx.sender.client.getBalance({ address: a as Address });
    if (balance >= LOW_BALANCE_WEI) continue;
    if (ctx.chain.embedded) await setDevBalance((method, params) => ctx.sender.client.request({ method: method as any, params: params as any }), a, 10n ** 26n);
    else short.push(getAddress(a));
  }
  if (short.length === 0) return null;
  if (r.fund_wei === null)
    return `waiting for funds: the new relayers ${short.join(', ')} need at least ${LOW_BALANCE_WEI} wei each (mintworks chain fund --chain ${ctx.chain.id} lists them)`;
  const id = Number(r.id);
  const amount = BigInt(r.fund_wei);
  const deployer = ctx.keys.deployer();
  const toSend: Address[] = [];
  // A transfer final and mined funded its relayer (which may have spent some since): never sent again.
  for (const a of short) if ((await stateOf(ctx, id, 'fund', a, a, async () => false)) === 'to_send') toSend.push(a);
  const need = amount * BigInt(toSend.length) + LOW_BALANCE_WEI;
  if (toSend.length && (await ctx.sender.client.getBalance({ address: deployer.address })) < need)
    return `waiting for funds: the deployer ${deployer.address} needs ${need} wei to fund the new relayers ${toSend.join(', ')} (or fund them yourself)`;
  for (const a of toSend) await send(ctx, id, 'fund', a, a, deployer, '0x', amount);
  return `funding the new relayers from the deployer (${amount} wei each): ${short.length} not funded yet`;
}

/** Every contract of the chain with an operator set: its deployed collections and rewards. */
async function operatorContracts(ctx: ChainCtx): Promise<Address[]> {
  const [collections, rewards] = await Promise.all([
    ctx.db.selectFrom('collections').select('contract_address').where('chain_id', '=', ctx.chain.id).where('contract_address', 'is not', null).execute(),
    ctx.db.selectFrom('rewards').select('contract_address').where('chain_id', '=', ctx.chain.id).where('contract_address', 'is not', null).execute(),
  ]);
  return [...collections, ...rewards].map((c) => getAddress(c.contract_address!));
}

/**
 * Makes `accounts` operators (`grant`) or not (`revoke`) of every contract of the chain, sending what is
 * missing; first hands a contract a relayer owns to the deployer. Counts the contracts where all of it
 * is final.
 */
async function ensureOperators(ctx: ChainCtx, rotationId: number, accounts: string[], action: 'grant' | 'revoke'): Promise<{ done: number; total: number }> {
  const contracts = await operatorContracts(ctx);
  const deployer = ctx.keys.deployer();
  let done = 0;
  const toSend = [];
  for (const contract of contracts) {
    // A handover not final yet may still be undone (a reorganisation, a node restarted from older state):
    // the deployer's changes wait for it, or one could be mined before it and revert.
    if ((await stateOf(ctx, rotationId, 'handover', contract, deployer.address, () => Promise.resolve(false))) === 'waiting') continue;
    const owner = ((await ctx.sender.client.readContract({ address: contract, abi: OPERATOR_ABI, functionName: 'owner' })) as Address).toLowerCase();
    if (owner !== deployer.address.toLowerCase()) {
      const signer = ctx.sender.relayerSet.all().find((e) => e.address === owner)?.signer;
      if (!signer) throw new Error(`contract ${contract} on chain ${ctx.chain.id} is owned by ${owner}, which is not an account of this installation`);
      const state = await stateOf(ctx, rotationId, 'handover', contract, deployer.address, () => Promise.resolve(false));
      if (state === 'to_send')
        toSend.push({
          action: 'handover' as const,
          contract,
          account: deployer.address.toLowerCase(),
          signer,
          data: call('transferOwnership', [deployer.address]),
        });
      continue; // its operators change once the deployer owns it
    }
    let all = true;
    for (const account of accounts) {
      const want = action === 'grant';
      const state = await stateOf(ctx, rotationId, action, contract, account, async () => {
        const is = (await ctx.sender.client.readContract({
          address: contract,
          abi: OPERATOR_ABI,
          functionName: 'isOperator',
          args: [account as Address],
        })) as boolean;
        return is === want;
      });
      if (state !== 'done') all = false;
      if (state === 'to_send') toSend.push({ action, contract, account, signer: deployer, data: call('setOperator', [getAddress(account), want]) });
    }
    if (all) done++;
  }
  for (const s of toSend) await send(ctx, rotationId, s.action, s.contract, s.account, s.signer, s.data);
  return { done, total: contracts.length };
}

const call = (functionName: 'setOperator' | 'transferOwnership', args: readonly unknown[]): Hex =>
  encodeFunctionData({ abi: OPERATOR_ABI, functionName, args } as Parameters<typeof encodeFunctionData>[0]);
