// Transactions unmined for longer than CHAIN_STUCK_SECONDS since they were recorded: one operator alert
// each (the tracker replaces them meanwhile; the alert says someone may need to look).
import type { Db } from '../store/db.js';
import type { ChainSpec } from './chains.js';
import { raise } from './alerts.js';
import { UNHANDLED } from './unhandled.js';

export class StuckWatch {
  /** Transactions already reported stuck. */
  private readonly reported = new Set<number>();

  constructor(
    private readonly db: Db,
    private readonly spec: ChainSpec,
    private readonly stuckSeconds: number,
  ) {}

  async check(): Promise<void> {
    const since = Date.now() - this.stuckSeconds * 1000;
    const rows = await this.db
      .selectFrom('chain_txs')
      .select(['id', 'kind', 'from_address', 'nonce', 'hash', 'bumps', 'created_at'])
      .where('chain_id', '=', this.spec.id)
      .where('handled', '=', UNHANDLED)
      .where('status', 'in', ['signed', 'sent'])
      .where('created_at', '<', since)
      .orderBy('created_at')
      .limit(20)
      .execute();
    for (const r of rows) {
      if (this.reported.has(r.id)) continue;
      this.reported.add(r.id);
      raise('chain.tx_stuck', {
        chain_id: this.spec.id,
        chain: this.spec.name,
        tx: r.id,
        kind: r.kind,
        from: r.from_address,
        nonce: r.nonce,
        hash: r.hash,
        replacements: r.bumps,
        age_s: Math.round((Date.now() - r.created_at) / 1000),
      });
    }
    if (this.reported.size > 10_000) this.reported.clear();
  }
}
