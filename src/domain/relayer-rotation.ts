// Pure rules of a relayer rotation (src/services/relayer-rotation.ts and its job).

/**
 * The `count` relayer indices after every one the installation has used: relayer rows on any chain, and
 * the HSM labels `…:relayer:<n>` (a key generated for an index is never given a second job).
 */
export function nextRelayerIndices(used: number[], labels: string[], count: number): number[] {
  if (!Number.isSafeInteger(count) || count < 1) throw new Error(`a rotation brings in at least one relayer (asked: ${count})`);
  let max = -1;
  for (const i of used) if (i > max) max = i;
  for (const label of labels) {
    const m = /:relayer:(\d+)$/.exec(label);
    if (m && Number(m[1]) > max) max = Number(m[1]);
  }
  return Array.from({ length: count }, (_, k) => max + 1 + k);
}

/** Where a pair (contract, account) of a rotation's grants or revokes stands. */
export type PairState = 'done' | 'waiting' | 'to_send';

/**
 * A pair's state from its recorded transactions (`final`: outcome applied; `ok`: mined without revert)
 * and, when none settles it, what the contract says now (`onChain`: whether the account is what the
 * rotation wants it to be). A failed transaction is sent again, up to `maxTries` in all.
 */
export function pairState(recorded: { final: boolean; ok: boolean }[], onChain: boolean | null, maxTries = 3): PairState | 'failed' {
  if (recorded.some((r) => !r.final)) return 'waiting';
  if (recorded.some((r) => r.ok)) return 'done';
  if (onChain === true) return 'done';
  if (recorded.length >= maxTries) return 'failed';
  return 'to_send';
}
