// The chain indexer: follows the Transfer logs of every deployed collection from a stored cursor and
// reconciles the database with the chain. It recognises deposits (a token arriving in a user's wallet
// from outside makes that user the owner, with asset.transferred) and ownership changes made outside
// the service. It resumes after restarts, waits `CHAIN_CONFIRMATIONS` blocks, and when the block under
// its cursor changed (reorg, or a rewound embedded chain) it steps back and reads the range again —
// a log that disagrees with the database is settled by the token's current owner on chain, so reading a
// range again (or a log late) never moves an asset back to a past owner. The service's own mints whose
// outcome this process marked are not checked again (src/chain/applied-mints.ts).
import { getAddress, parseAbiItem, type Address, type Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import { emitEvent } from '../events.js';
import { getAsset } from '../assets/reads.js';
import { NO_ACTIONS } from '../assets/create.js';
import { nowIso } from '../../util/time.js';
import { newUid } from '../../util/ids.js';
import { errMessage } from '../../chain/sender.js';
import { decodeTransferLogs, transferFilter, type RpcLog, type TransferLog } from '../../chain/transfer-logs.js';
import { chainKind } from '../../jobs/kinds.js';
import { applyItemLogs } from '../items/deposits.js';
import type { AppliedMints } from '../../chain/applied-mints.js';

const CURSOR = 'collections.transfers';
const ownerOfAbi = [parseAbiItem('function ownerOf(uint256) view returns (address)')] as const;
const MAX_RANGE = 2000n;
const REWIND_DEPTH = 64n;

export class ChainIndexer {
  private running = false;
  private done: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Each chain has its own cursor; the home chain's keeps the name it had when there was one chain. */
  private readonly cursorName: string;
  private readonly chainId: number;

  /**
   * `ctx`: the chain's own context (its sender's client, its confirmations). `appliedMints`: the mint
   * transactions this process's outcomes marked, whose logs need no check.
   */
  constructor(
    private readonly ctx: ChainCtx,
    private readonly appliedMints: AppliedMints,
    private readonly intervalMs = 1000,
  ) {
    this.chainId = ctx.sender.chainId;
    this.cursorName = chainKind(CURSOR, this.chainId, ctx.installation.homeChainId);
  }

  start(): void {
    this.running = true;
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake?.();
    await this.done;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        while (this.running && (await this.step())) {
          /* catching up: no pause between ranges */
        }
      } catch (err) {
        this.ctx.log.warn({ err: errMessage(err) }, 'indexer step failed, will retry');
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => resolve(), this.intervalMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Processes one range of blocks. Returns true when more ranges are waiting. */
  // Long: one pass over a chain's new logs: the collections', then the items', with one cursor between them.
  async step(): Promise<boolean> {
    const client = this.ctx.sender.client;
    // cacheTime 0: a cached (older) head would look like a chain that lost the cursor's block.
    const head = (await client.getBlockNumber({ cacheTime: 0 })) - BigInt(this.ctx.chain.confirmations);
    if (head < 0n) return false;
    const cursor = await this.ctx.db.selectFrom('chain_cursors').selectAll().where('name', '=', this.cursorName).executeTakeFirst();
    if (!cursor) {
      const b = await client.getBlock({ blockNumber: head });
      await this.saveCursor(head, b.hash);
      return false;
    }
    const from = BigInt(cursor.block_number);
    // Is the block under the cursor still the one we read? If not, the chain changed beneath us.
    const atCursor = from <= head ? await client.getBlock({ blockNumber: from }).catch(() => null) : null;
    // Off the embedded chain, a head below the cursor or a block not served is a provider's backend
    // behind the others, not proof of a reorg: only another block at the cursor's height is.
    if (!atCursor && !this.ctx.chain.embedded) return false;
    if (!atCursor || atCursor.hash !== cursor.block_hash) {
      const back = from > REWIND_DEPTH ? from - REWIND_DEPTH : 0n;
      const target = back > head ? head : back;
      this.ctx.log.warn(
        { chain: this.chainId, cursor: Number(from), head: Number(head), resumeAt: Number(target) },
        'the chain changed under the indexer cursor (reorg or rewound chain): reading again',
      );
      const b = await client.getBlock({ blockNumber: target });
      await this.saveCursor(target, b.hash);
      return true;
    }
    if (from >= head) return false;
    const to = from + MAX_RANGE < head ? from + MAX_RANGE : head;
    /** The applied mint transactions whose logs this range skips. */
    const read = new Set<string>();
    const collections = await this.ctx.db
      .selectFrom('collections')
      .select(['uid', 'app_uid', 'contract_address', 'standard'])
      .where('chain_id', '=', this.chainId)
      .where('status', '=', 'deployed')
      .execute();
    // ERC-1155 collections log TransferSingle/TransferBatch: item balances and deposits (services/items).
    const itemCollections = collections.filter((c) => c.standard === 'ERC1155');
    if (itemCollections.length > 0) await applyItemLogs(this.ctx, itemCollections, from + 1n, to);
    if (collections.length > 0) {
      const raw = await client.request({
        method: 'eth_getLogs',
        params: [
          transferFilter(
            collections.map((c) => c.contract_address!),
            from + 1n,
            to,
          ),
        ],
      });
      const byAddress = new Map(collections.map((c) => [c.contract_address!.toLowerCase(), c]));
      const logs = decodeTransferLogs(this.unchecked(raw as RpcLog[], read)).filter((l) => byAddress.has(l.address));
      const known = await this.knownTokens(logs.map((l) => ({ collection: byAddress.get(l.address)!.uid, tokenId: Number(l.tokenId) })));
      for (const log of logs) {
        const c = byAddress.get(log.address)!;
        await this.apply(log, c, known.get(`${c.uid}:${Number(log.tokenId)}`));
      }
    }
    const end = await client.getBlock({ blockNumber: to });
    await this.saveCursor(to, end.hash);
    this.appliedMints.forget(read);
    return to < head;
  }

  /**
   * The logs that need a check: not the mints of a transaction whose outcome this process marked
   * (AppliedMints), whose hashes are collected in `read` to be dropped once the range is done.
   */
  private unchecked(logs: RpcLog[], read: Set<string>): RpcLog[] {
    const applied = this.appliedMints;
    if (applied.size === 0) return logs;
    return logs.filter((l) => {
      if (!applied.covers(l)) return true;
      read.add(l.transactionHash!);
      return false;
    });
  }

  private async saveCursor(n: bigint, hash: Hex): Promise<void> {
    await this.ctx.db
      .insertInto('chain_cursors')
      .values({ name: this.cursorName, block_number: Number(n), block_hash: hash, updated_at: Date.now() })
      .onConflict((oc) => oc.column('name').doUpdateSet({ block_number: Number(n), block_hash: hash, updated_at: Date.now() }))
      .execute();
  }

  /**
   * The tokens of a range's logs as the database has them, read in bulk before the logs are applied
   * (a burst of mints is thousands of logs). Only used to skip logs the database already agrees with:
   * a row changed meanwhile at worst costs one ownerOf call, and every change re-reads its row.
   */
  private async knownTokens(tokens: { collection: string; tokenId: number }[]): Promise<Map<string, KnownToken>> {
    const byCollection = new Map<string, number[]>();
    for (const t of tokens) {
      const ids = byCollection.get(t.collection);
      if (ids) ids.push(t.tokenId);
      else byCollection.set(t.collection, [t.tokenId]);
    }
    const known = new Map<string, KnownToken>();
    for (const [collection, ids] of byCollection) {
      const unique = [...new Set(ids)];
      for (let i = 0; i < unique.length; i += 500) {
        const rows = await this.ctx.db
          .selectFrom('assets')
          .select(['token_id', 'mint_status', 'is_transferring', 'is_burning', 'is_burned', 'owner_address'])
          .where('collection_uid', '=', collection)
          .where('token_id', 'in', unique.slice(i, i + 500))
          .execute();
        for (const r of rows) known.set(`${collection}:${Number(r.token_id)}`, r);
      }
    }
    return known;
  }

  /**
   * Applies one Transfer log. When the database already agrees with the log, nothing is asked of the
   * chain. Otherwise the token's CURRENT owner on chain decides (not the log's `to`): logs read again
   * after a reorg or rewind, or out of order, can then never move the database back to a past owner.
   * Long: the owner's cases (agrees, moved, burned) share the token's facts, read once.
   */
  private async apply(log: TransferLog, c: { uid: string; app_uid: string; contract_address: string | null }, known: KnownToken | undefined): Promise<void> {
    const { tokenId, to: toAddr } = log;
    const ctx = this.ctx;
    // Our own mints, transfers and burns in flight are applied by their own outcome handlers.
    if (known && (known.mint_status !== 'minted' || known.is_transferring || known.is_burning)) return;
    if (known && (known.is_burned ? BigInt(toAddr) === 0n : known.owner_address === toAddr)) return;
    const current = await ctx.sender.client
      .readContract({ address: c.contract_address as Address, abi: ownerOfAbi, functionName: 'ownerOf', args: [tokenId] })
      .then(
        (o) => o.toLowerCase(),
        () => null,
      ); // reverts for a burned (or never minted) token
    await ctx.db.transaction().execute(async (tx) => {
      const asset = await tx.selectFrom('assets').selectAll().where('collection_uid', '=', c.uid).where('token_id', '=', Number(tokenId)).executeTakeFirst();
      if (asset && (asset.mint_status !== 'minted' || asset.is_transferring || asset.is_burning)) return;
      const t = nowIso();
      if (current === null) {
        if (asset && !asset.is_burned)
          await tx.updateTable('assets').set({ is_burned: 1, updated_at: t }).where('uid', '=', asset.uid).where('is_burned', '=', 0).execute();
        return;
      }
      const user = await tx.selectFrom('users').select('uid').where('app_uid', '=', c.app_uid).where('wallet_address', '=', current).executeTakeFirst();
      if (asset) {
        // Conditional, so that when several worker processes read the same log only one applies it.
        const r = await tx
          .updateTable('assets')
          .set({ owner_address: current, owner_user_uid: user?.uid ?? null, updated_at: t })
          .where('uid', '=', asset.uid)
          .where((eb) => eb.or([eb('owner_address', 'is', null), eb('owner_address', '!=', current)]))
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) > 0 && user) {
          ctx.log.info({ asset: asset.uid, user: user.uid }, 'deposit: token arrived in a user wallet');
          await emitEvent(tx, c.app_uid, 'asset.transferred', { asset: await getAsset(ctx, c.app_uid, asset.uid, tx) });
        }
        return;
      }
      if (!user) return; // a token the service does not know, held outside the App's wallets
      // A token of an App collection the service has no record of, deposited into a user's wallet.
      const uid = newUid();
      const name = `${getAddress(log.address)} #${tokenId}`;
      await tx
        .insertInto('assets')
        .values({
          uid,
          app_uid: c.app_uid,
          collection_uid: c.uid,
          asset_external_id: `deposit:${log.address}:${tokenId}`,
          mint_for_user_uid: user.uid,
          name,
          unique_name_key: null,
          token_id: Number(tokenId),
          mint_status: 'minted',
          ...NO_ACTIONS,
          owner_user_uid: user.uid,
          owner_address: current,
          mint_for_address: current,
          token_uri: `${ctx.installation.publicUrl}/metadata/${c.uid}/${tokenId}`,
          sale_price_in_usd: null,
          metadata: JSON.stringify({ name, image: null, org_image_url: null, original_id: uid }),
          created_at: t,
          updated_at: t,
        })
        .execute();
      await emitEvent(tx, c.app_uid, 'asset.transferred', { asset: await getAsset(ctx, c.app_uid, uid, tx) });
    });
  }
}

/** What the indexer needs of a token's row to tell whether a log changes anything. */
type KnownToken = { mint_status: string; is_transferring: number; is_burning: number; is_burned: number; owner_address: string | null };
