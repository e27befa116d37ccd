// Request schemas of the public API. They validate requests and generate /openapi.json, so the
// documentation cannot drift from what is enforced.
import { z } from 'zod';
import { MAX_PAGE_SIZE } from '../../services/requests/pages.js';
import { MAX_BATCH } from '../../services/assets/batch.js';
import { AmountError, parseAmount } from '../../domain/amounts.js';
import { isAssetUrl } from '../../domain/assets.js';
import { isInvisible, isStorableText, STORABLE_TEXT_MESSAGE } from '../../domain/text.js';
import { quickAssetBody } from './quick-asset-body.js';

// Friendlier messages than zod's defaults; the SDKs show `message` to developers.
z.config({
  customError: (iss) => {
    if (iss.code === 'invalid_type') {
      if (iss.input === undefined) return 'This field is required.';
      if (iss.input === null) return 'This field may not be null.';
      return `Must be ${/^[aeiou]/.test(String(iss.expected)) ? 'an' : 'a'} ${iss.expected}.`;
    }
    if (iss.code === 'unrecognized_keys') return `Unknown field(s): ${iss.keys.join(', ')}.`;
    return undefined;
  },
});

export { isStorableText, STORABLE_TEXT_MESSAGE };

/**
 * THE string type of every request schema (bodies, query strings, path parameters): a string that
 * can be stored as given. Use it instead of z.string() everywhere a request is read; formats go on
 * top of it (str().email(), str().url()) so that this check comes first and alone when it fails.
 */
export const str = (params?: Parameters<typeof z.string>[0]) => z.string(params).refine(isStorableText, { message: STORABLE_TEXT_MESSAGE, abort: true });

/** `limit` and `cursor` of the paged lists (see paging.ts). */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional().describe(`Entries per page (default and most: ${MAX_PAGE_SIZE}).`),
  cursor: str().max(200).optional().describe('From the `Link: <…>; rel="next"` header of the previous page.'),
};

/** A required query parameter: absent and empty both answer "This field is required.". */
export const requiredStr = () => str({ error: 'This field is required.' }).min(1, 'This field is required.');

const text = (max: number) => str().trim().min(1, 'This field may not be blank.').max(max, `Ensure this field has no more than ${max} characters.`);
const httpUrl = str().max(2048, 'Ensure this field has no more than 2048 characters.').refine(isAssetUrl, 'Enter a valid URL.');

export const uidParam = z.object({ uid: str() });

export const createUserBody = z
  .object({
    email: str().email({ error: 'Enter a valid email address.' }).max(254, 'Enter a valid email address.').nullish(),
    user_external_id: text(255).nullish(),
  })
  .describe('Both fields are optional and unique per App.');

export const userLookupQuery = z.object({
  email: str().optional(),
  user_external_id: str().optional(),
  client_id: str().optional(),
});

export const attribute = z.object({
  trait_type: str().min(1, 'This field may not be blank.').max(255),
  value: z.union([str().max(1024), z.number().finite()], { error: 'Must be a string or a number.' }),
  display_type: str().max(64).nullish(),
});

const assetDataFields = {
  // A name only of invisible characters (zero-width spaces …) is blank too; reported once, when the
  // length checks pass.
  name: text(255).refine((s) => s === '' || s.length > 255 || !isInvisible(s), 'This field may not be blank.'),
  unique_name: z.boolean(),
  image_url: httpUrl,
  description: str().max(10_000, 'Ensure this field has no more than 10000 characters.').nullish(),
  external_url: httpUrl.nullish(),
  attributes: z.array(attribute).max(100, 'Ensure this field has no more than 100 elements.').nullish(),
};

export const createAssetBody = z.object({
  user_uid: text(32),
  collection_uid: text(32),
  asset_external_id: text(255),
  sale_price_in_usd: z.number().finite().min(0, 'Ensure this value is greater than or equal to 0.').nullish(),
  data: z.object({ ...assetDataFields, store_image_on_ipfs: z.boolean() }),
});

/**
 * POST /asset/batch: only the envelope is checked here (1-100 items); each item is checked against
 * createAssetBody on its own (batchItem), so that one bad item never refuses the others.
 */
export const assetBatchBody = z.object({
  assets: z
    .array(z.unknown().describe('The parameters of POST /asset (AssetParams), checked per item'))
    .min(1, 'Send at least one asset.')
    .max(MAX_BATCH, `Ensure this field has no more than ${MAX_BATCH} elements.`),
});

/** An item of a batch: its parameters, or why they are refused (the first problem, naming its field). */
export function batchItem(item: unknown): z.infer<typeof createAssetBody> | { error: { code: string; message: string } } {
  const quick = quickAssetBody(item);
  if (quick) return quick;
  const r = createAssetBody.safeParse(item);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue.path.join('.');
  const code = issue.code === 'invalid_type' && issue.message === 'This field is required.' ? 'required' : 'invalid';
  return { error: { code, message: field ? `${field}: ${issue.message}` : issue.message } };
}

export const editAssetBody = z.object({ data: z.object(assetDataFields) });

/** An item's document fields (docs/api.md, Items): an asset's, without unique_name (an item's name need not be unique). */
const { unique_name: _uniqueName, ...itemDataFields } = assetDataFields;
export const itemData = z.object({ ...itemDataFields, store_image_on_ipfs: z.boolean() });
export const editItemData = z.object({ ...itemDataFields, unique_name: z.boolean().optional().describe('Accepted for EditData alike; items ignore it.') });

export const assetListQuery = z.object({ user_uid: str().optional(), ...pageQuery });

export const depositQuery = z.object({
  user_uid: requiredStr(),
  collection_uid: str().optional().describe("The collection whose chain to deposit on; without it, the App's default chain."),
});

export const transferBody = z.object({
  asset_uid: text(32),
  from_user_uid: text(32),
  to_address: str().max(64, 'Enter a valid address: 0x followed by 40 hexadecimal characters.'),
});

export const burnBody = z.object({ asset_uid: text(32), from_user_uid: text(32) });

export const userListQuery = z.object({ user_uid: str().optional(), ...pageQuery });

/**
 * An amount: JSON number or numeric string, checked with the exact decimal rules of
 * src/domain/amounts.ts (the route parses it again into base units; the schema only validates, so the
 * OpenAPI document stays a plain number|string).
 */
export const amountField = z
  .union([z.number(), str()], { error: (iss) => (iss.input === undefined ? 'This field is required.' : 'Must be a number or a numeric string.') })
  .superRefine((v, c) => {
    try {
      parseAmount(v);
    } catch (err) {
      if (!(err instanceof AmountError)) throw err;
      c.addIssue({ code: 'custom', message: err.message });
    }
  })
  .describe('A decimal amount (18 decimals at most) as a JSON number or a numeric string, e.g. 1.5 or "1.5".');

/** A collection's token standard at creation: ERC721 (unique assets, the default) or ERC1155 (stackable items). */
export const collectionStandard = z
  .enum(['ERC721', 'ERC1155'], { error: 'Must be "ERC721" or "ERC1155".' })
  .nullish()
  .describe('ERC721 (default): unique assets (/asset). ERC1155: stackable items (/item). Fixed once created.');
