// Pure rules of items (ERC-1155): amounts, and what a transfer or burn may take of a balance. No I/O.
//
// Amounts are whole numbers of an item, accepted as JSON numbers or numeric strings ("5", 5) and
// written as JSON numbers while a double holds them exactly (up to 2^53 - 1), else as strings. The
// contract keeps what was minted of an item in 128 bits, so no amount or max supply goes beyond.

export const MAX_ITEM_AMOUNT = 2n ** 128n - 1n;

export class ItemAmountError extends Error {}

/** A request's amount or max supply as a positive integer. Throws ItemAmountError. */
export function parseItemAmount(input: unknown): bigint {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) throw new ItemAmountError('Must be a whole number (larger ones as a numeric string).');
    text = String(input);
  } else if (typeof input === 'string') text = input;
  else throw new ItemAmountError('Must be a whole number or a numeric string.');
  if (!/^[0-9]{1,40}$/.test(text)) throw new ItemAmountError('Must be a whole number, written with digits only, such as 5 or "5".');
  const n = BigInt(text);
  if (n <= 0n) throw new ItemAmountError('Must be greater than 0.');
  if (n > MAX_ITEM_AMOUNT) throw new ItemAmountError('Must be at most 2^128 - 1.');
  return n;
}

/** An amount as the API writes it: a JSON number up to 2^53 - 1, a string beyond. */
export function itemAmountOut(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

export const amountFromDb = (text: string | null | undefined): bigint => (text ? BigInt(text) : 0n);

/** Whether `amount` more stays within the max supply (null: unlimited), counting accepted mints. */
export function withinMaxSupply(maxSupply: bigint | null, accepted: bigint, amount: bigint): boolean {
  return maxSupply === null || accepted + amount <= maxSupply;
}

/** What a user may still transfer or burn: what the chain holds minus what requests in flight reserved. */
export function spendable(held: bigint, reserved: bigint): bigint {
  const s = held - reserved;
  return s > 0n ? s : 0n;
}
