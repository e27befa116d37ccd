// The counts of a verification: records checked, records in flight (pending or unfinal: not judged),
// and records whose chain facts could not be read (a node that did not answer: not judged either).
export type Counts = Record<string, number>;

export interface Tally {
  checked(kind: string): void;
  add(kind: string, n: number): void;
  inFlight(kind: string): void;
  unverified(kind: string): void;
  readonly counts: { checked: Counts; in_flight: Counts; unverified: Counts };
}

export const RECORD_KINDS = [
  'collections',
  'rewards',
  'assets',
  'transfers',
  'burns',
  'allocations',
  'claims',
  'reward_balances',
  'items',
  'item_balances',
] as const;

export function tally(): Tally {
  const zero = (): Counts => Object.fromEntries(RECORD_KINDS.map((k) => [k, 0]));
  const counts = { checked: zero(), in_flight: zero(), unverified: zero() };
  const bump = (m: Counts, k: string, n = 1) => void (m[k] = (m[k] ?? 0) + n);
  return {
    counts,
    checked: (k) => bump(counts.checked, k),
    add: (k, n) => bump(counts.checked, k, n),
    inFlight: (k) => bump(counts.in_flight, k),
    unverified: (k) => bump(counts.unverified, k),
  };
}
