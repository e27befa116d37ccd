// The sender's outcome dispatch on a real SQLite database, with a node that only answers receipt
// lookups: outcomes wait until the handler table is given; each is applied once (its effect under the
// sender's guard, its after-commit step after that); the receipt is looked up by the sender; a kind
// with no handler is reported and left unapplied, never marked done.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { PublicClient, TransactionReceipt } from 'viem';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { KeyRing } from '../../src/chain/keys.js';
import { SecretBox } from '../../src/util/secretbox.js';
import type { ChainSender } from '../../src/chain/sender.js';
import type { ChainTracker } from '../../src/chain/tracker.js';
import { chainWing, outcomeTable } from '../helpers/chain-wing.js';
import { forwarderDeployed, type Outcome, type OutcomeHandler, type OutcomeHandlers, type OutcomeKind } from '../../src/chain/outcomes.js';
import type { JobQueue } from '../../src/jobs/queue.js';
import type { ChainJobHandlers } from '../../src/jobs/worker.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const CHAIN = 31337;

describe('chain outcome dispatch', () => {
  let store: Store;
  let sender: ChainSender;
  let tracker: ChainTracker;
  const logged: { level: number; msg: string; kind?: string }[] = [];
  const receipts = new Map<string, TransactionReceipt>();
  let lookups = 0;
  let nonce = 0;

  before(async () => {
    store = openStore({ dataDir: await migratedSqliteDir(CHAIN) });
    await migrateToLatest(store, CHAIN);
    const keys = await KeyRing.open(store.db, new SecretBox('11'.repeat(32)));
    // The tracker's pass over transactions already mined asks the node for nothing but receipts.
    const node = {
      async request({ method, params }: { method: string; params: [string] }) {
        if (method !== 'eth_getTransactionReceipt') throw new Error(`not this call: ${method}`);
        lookups++;
        const r = receipts.get(params[0]);
        return r ? { ...r, status: r.status === 'success' ? '0x1' : '0x0' } : null;
      },
    } as unknown as PublicClient;
    const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    ({ sender, tracker } = chainWing(store.db, node, keys, CHAIN, log, { flush: () => store.flush() }));
  });
  after(() => store.close());

  /** A transaction recorded and mined (the tracker has set its status), its outcome not applied yet. */
  async function minedTx(kind: string, payload: unknown): Promise<{ id: number; hash: string }> {
    const hash = `0x${(++nonce).toString(16).padStart(64, '0')}`;
    const t = Date.now();
    const row = await store.db
      .insertInto('chain_txs')
      .values({
        chain_id: CHAIN,
        from_address: '0xabc',
        nonce,
        kind,
        ref: `ref-${nonce}`,
        payload: JSON.stringify(payload),
        raw: '0x00',
        hash,
        status: 'mined',
        handled: 0,
        created_at: t,
        updated_at: t,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, hash };
  }
  const handled = async (id: number) => (await store.db.selectFrom('chain_txs').select('handled').where('id', '=', id).executeTakeFirstOrThrow()).handled;

  /** Every handler refuses to run, except the forwarder's and those a test gives. */
  const table = (overrides: Partial<OutcomeHandlers>) => outcomeTable({ 'forwarder.deploy': forwarderDeployed, ...overrides });

  it('applies nothing before the handlers are given, then each outcome once, with its receipt and payload', async () => {
    const tx = await minedTx('reward.withdraw', { reward_uid: 'r1', contract: '0xc0' });
    receipts.set(tx.hash, { status: 'success', transactionHash: tx.hash } as unknown as TransactionReceipt);
    await tracker.trackOnce();
    assert.equal(await handled(tx.id), 0, 'waits for its handler (start-up)');

    const seen: Outcome<'reward.withdraw'>[] = [];
    let effects = 0;
    let afterCommit = 0;
    const withdraw: OutcomeHandler<'reward.withdraw'> = async (o) => {
      seen.push(o);
      return async (dbTx) => {
        effects++;
        // The effect runs inside the transaction that marks the outcome applied.
        assert.equal((await dbTx.selectFrom('chain_txs').select('handled').where('id', '=', tx.id).executeTakeFirstOrThrow()).handled, 1);
        return () => void afterCommit++;
      };
    };
    tracker.useOutcomes(table({ 'reward.withdraw': withdraw }));
    const before = lookups;
    // Two trackers at once (as two workers would be): the guard lets one of them apply it.
    await Promise.all([tracker.trackOnce(), tracker.trackOnce()]);
    await tracker.trackOnce();
    assert.equal(effects, 1, 'the effect ran once');
    assert.equal(afterCommit, 1);
    assert.equal(await handled(tx.id), 1);
    assert.ok(lookups > before, 'the applier looked the receipt up (the tracker did not just fetch it)');
    assert.deepEqual(seen[0].payload, { reward_uid: 'r1', contract: '0xc0' });
    assert.equal(seen[0].receipt?.transactionHash, tx.hash);
    assert.equal(seen[0].ok, true);
  });

  it('leaves an outcome whose handler failed for the next pass, and applies it then', async () => {
    const tx = await minedTx('asset.edit', { asset_uid: 'a1' });
    let calls = 0;
    tracker.useOutcomes(
      table({
        'asset.edit': async () => async () => {
          if (++calls === 1) throw new Error('database busy');
        },
      }),
    );
    await tracker.trackOnce();
    assert.equal(await handled(tx.id), 0, 'rolled back with the failed effect');
    await tracker.trackOnce();
    assert.equal(calls, 2);
    assert.equal(await handled(tx.id), 1);
  });

  it('reports a kind no handler is declared for, once, and leaves it unapplied', async () => {
    const tx = await minedTx('asset.teleport', {});
    await tracker.trackOnce();
    await tracker.trackOnce();
    assert.equal(await handled(tx.id), 0, 'left for a version that knows the kind');
    const reports = logged.filter((l) => l.kind === 'asset.teleport' && l.level >= 50);
    assert.equal(reports.length, 1, 'one error, not one per pass');
    assert.match(reports[0].msg, /no handler/);
    assert.equal(await sender.pendingCount(), 1, 'still counted as unconfirmed');
  });
});

// Compile-time checks (`npm run typecheck`): what the registries refuse. Never called.
export function refusedByTheCompiler(
  queue: JobQueue,
  sender: ChainSender,
  handlers: OutcomeHandlers,
  jobHandlers: ChainJobHandlers,
  dbTx: Parameters<ChainSender['record']>[0],
) {
  const { 'asset.mint': _mint, ...withoutMint } = handlers;
  // @ts-expect-error a handler table without the mint handler
  const missing: OutcomeHandlers = withoutMint;
  const { 'reward.claim': _claim, ...withoutClaim } = jobHandlers;
  // @ts-expect-error a chain job table without the claim job's handler
  const missingJob: ChainJobHandlers = withoutClaim;
  // @ts-expect-error a relayed transfer's job must say which action it relays
  void queue.enqueue(dbTx, { kind: 'asset.forward', ref: 'x' });
  // @ts-expect-error the mint job counts rounds with a number
  void queue.enqueue(dbTx, { kind: 'asset.mint', ref: 'x', payload: { round: 'two' } });
  // @ts-expect-error a job kind nobody declared
  void queue.enqueueMany(dbTx, [{ kind: 'asset.teleport', ref: 'x' }]);
  // @ts-expect-error a withdrawal is recorded with its contract
  void sender.record(dbTx, { kind: 'reward.withdraw', ref: 'r', payload: { reward_uid: 'r' }, to: null, data: '0x', gas: 1n });
  const kind: OutcomeKind = 'forward';
  return { missing, missingJob, kind };
}
