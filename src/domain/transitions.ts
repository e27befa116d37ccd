// Every status a chain transaction and the records it carries may take, and the moves allowed between
// them: one table, read by every UPDATE that changes a status (its WHERE names the statuses the row may
// leave, so a row another worker or process has moved on is left alone). A `mined` transaction or a
// `done` record never goes back; a failure may still become a success when the chain shows one (the
// chain is authoritative: a burn or transfer the chain did, a contract found at its address).

/** Status columns and their moves: `from -> allowed destinations`. */
export const TRANSITIONS = {
  /**
   * chain_txs.status. `mined`/`reverted` -> `sent` only on proof that the chain no longer has the block
   * it was mined in (a rewind or reorganisation): see REWOUND. Nothing else goes back.
   */
  chain_tx: { signed: ['sent', 'mined', 'reverted'], sent: ['mined', 'reverted'], mined: [], reverted: [] },
  /** assets.mint_status */
  asset_mint: { pending: ['minted', 'failed'], failed: ['minted'], minted: [] },
  /** transfers.status and burns.status: a cancelled one becomes done when the chain shows it done. */
  transfer: { pending: ['done', 'cancelled'], cancelled: ['done'], done: [] },
  burn: { pending: ['done', 'cancelled'], cancelled: ['done'], done: [] },
  /** allocations.status and claims.status */
  allocation: { pending: ['done', 'failed'], failed: ['done'], done: [] },
  claim: { pending: ['done', 'failed'], failed: ['done'], done: [] },
  /** collections.status and rewards.status */
  collection: { deploying: ['deployed', 'failed'], failed: ['deployed'], deployed: [] },
  reward: { deploying: ['deployed'], deployed: [] },
} as const satisfies Record<string, Record<string, readonly string[]>>;

export type Machine = keyof typeof TRANSITIONS;
export type StatusOf<M extends Machine> = keyof (typeof TRANSITIONS)[M] & string;

/** The one backward move: a transaction the chain lost (its block is gone) goes back to be sent again. */
export const REWOUND = { from: ['mined', 'reverted'], to: 'sent' } as const;

/** Whether `from -> to` is allowed. */
export function canMove<M extends Machine>(machine: M, from: StatusOf<M>, to: StatusOf<M>): boolean {
  const moves = (TRANSITIONS[machine] as Record<string, readonly string[]>)[from] ?? [];
  return moves.includes(to);
}

/**
 * The statuses a row may be in to move to `to`: the WHERE of the UPDATE that moves it. Never empty
 * for a reachable status (a move to a status nothing leads to is a programming error).
 */
export function leavingFor<M extends Machine>(machine: M, to: StatusOf<M>): StatusOf<M>[] {
  const table = TRANSITIONS[machine] as Record<string, readonly string[]>;
  const from = Object.keys(table).filter((s) => table[s].includes(to)) as StatusOf<M>[];
  if (from.length === 0) throw new Error(`no status of ${machine} moves to ${to}`);
  return from;
}

/** Statuses no move leaves (final). */
export function finalStatuses<M extends Machine>(machine: M): StatusOf<M>[] {
  const table = TRANSITIONS[machine] as Record<string, readonly string[]>;
  return Object.keys(table).filter((s) => table[s].length === 0) as StatusOf<M>[];
}
