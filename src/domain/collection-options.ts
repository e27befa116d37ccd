// Collection options (docs/api.md, Collection options): the ERC-2981 royalty, ERC-5192 soulbound
// tokens, and the collection's own metadata document that ERC-7572 `contractURI()` points at. Pure: the
// checks answer what is wrong, the document is built from the collection's record.
import type { FieldErrorCode } from './error-codes.js';
import { checkAddress } from './address.js';

/** Marketplaces read royalties in basis points; more than 10 % is refused as a likely mistake. */
export const MAX_ROYALTY_BPS = 1000;

/** The options a PATCH may change (soulbound is fixed at deployment). */
export interface ChangeableOptions {
  description?: string | null;
  image_url?: string | null;
  external_url?: string | null;
  royalty_receiver?: string | null;
  royalty_bps?: number | null;
}

/** A royalty as the record keeps it: both set, or both null. */
export interface Royalty {
  royalty_receiver: string | null;
  royalty_bps: number | null;
}

export type FieldProblem = { field: string; code: FieldErrorCode; message: string };

/**
 * The royalty a request leaves the collection with (`current`: what it has now). A receiver without a
 * rate, or a rate without a receiver, is refused: ERC-2981 answers both or neither. Returns the problems
 * or the lower-case royalty to store.
 */
export function resolveRoyalty(
  change: Pick<ChangeableOptions, 'royalty_receiver' | 'royalty_bps'>,
  current: Royalty,
): { ok: true; royalty: Royalty } | { ok: false; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  let receiver = change.royalty_receiver === undefined ? current.royalty_receiver : change.royalty_receiver;
  const bps = change.royalty_bps === undefined ? current.royalty_bps : change.royalty_bps;
  if (receiver !== null) {
    const checked = checkAddress(receiver);
    if (checked.ok) receiver = checked.address;
    else problems.push({ field: 'royalty_receiver', code: 'invalid', message: checked.message });
  }
  if (bps !== null && (!Number.isInteger(bps) || bps < 0 || bps > MAX_ROYALTY_BPS))
    problems.push({
      field: 'royalty_bps',
      code: 'invalid',
      message: `royalty_bps must be an integer from 0 to ${MAX_ROYALTY_BPS} (basis points: 250 = 2.5 %).`,
    });
  if (problems.length === 0 && (receiver === null) !== (bps === null)) {
    const missing = receiver === null ? 'royalty_receiver' : 'royalty_bps';
    problems.push({ field: missing, code: 'required', message: 'royalty_receiver and royalty_bps are set together (or both null: no royalty).' });
  }
  return problems.length ? { ok: false, problems } : { ok: true, royalty: { royalty_receiver: receiver, royalty_bps: bps } };
}

/** What the document is built from: the collection's record. */
export interface ContractDocumentSource extends Royalty {
  name: string;
  description: string | null;
  image_url: string | null;
  external_url: string | null;
}

/**
 * The ERC-7572 contract document, in the shape marketplaces read (OpenSea's contract-level metadata):
 * absent texts are left out, the royalty is always stated (0 and the zero address when there is none).
 */
export function contractDocument(c: ContractDocumentSource): Record<string, unknown> {
  return {
    name: c.name,
    ...(c.description ? { description: c.description } : {}),
    ...(c.image_url ? { image: c.image_url } : {}),
    ...(c.external_url ? { external_link: c.external_url } : {}),
    seller_fee_basis_points: c.royalty_bps ?? 0,
    fee_recipient: c.royalty_receiver ?? '0x0000000000000000000000000000000000000000',
  };
}
