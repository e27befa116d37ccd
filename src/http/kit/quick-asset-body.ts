// POST /asset's body (and each item of a batch) accepted without zod when nothing in it is unusual.
//
// zod checks a field by making a result object and an issue list for it, about 3.5 KB of garbage per
// create, which the API's thread collects at thousands of creates a second. This reads the same fields
// with the same rules (the same predicates: isStorableText, isInvisible, isAssetUrl) and builds the
// value zod would give: the same keys in the same order (unknown ones left out, as zod strips them),
// strings trimmed where zod trims. It answers null whenever a field is one zod would refuse: the answer
// to a bad body, and its message, always comes from the schema (createAssetBody), and the schema stays
// what /openapi.json documents. test/unit/quick-asset-body.test.ts holds the two to the same value
// over thousands of bodies, valid and not.
import type { AssetParams } from '../../services/assets/create.js';
import { isInvisible, isStorableText } from '../../domain/text.js';
import { isAssetUrl } from '../../domain/assets.js';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** text(max): a storable string, trimmed, 1 to `max` characters; undefined when zod must decide. */
function text(v: unknown, max: number): string | undefined {
  if (typeof v !== 'string' || !isStorableText(v)) return undefined;
  const t = v.trim();
  return t.length >= 1 && t.length <= max ? t : undefined;
}

/** A storable string of at most `max` characters, as given. */
const plain = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max && isStorableText(v);

const assetUrl = (v: unknown): v is string => plain(v, 2048) && isAssetUrl(v);

/** An attribute as zod gives it, or undefined. */
function attribute(a: unknown): Obj | undefined {
  if (!isObject(a)) return undefined;
  const { trait_type, value } = a;
  if (!plain(trait_type, 255) || trait_type.length < 1) return undefined;
  if (!(typeof value === 'number' ? Number.isFinite(value) : plain(value, 1024))) return undefined;
  const out: Obj = { trait_type, value };
  if ('display_type' in a) {
    if (!(a.display_type == null || plain(a.display_type, 64))) return undefined;
    out.display_type = a.display_type;
  }
  return out;
}

/** `data` as zod gives it, or undefined. */
function assetData(d: unknown): Obj | undefined {
  if (!isObject(d)) return undefined;
  const name = text(d.name, 255);
  if (name === undefined || isInvisible(name)) return undefined;
  if (typeof d.unique_name !== 'boolean' || !assetUrl(d.image_url)) return undefined;
  const out: Obj = { name, unique_name: d.unique_name, image_url: d.image_url };
  if ('description' in d) {
    if (!(d.description == null || plain(d.description, 10_000))) return undefined;
    out.description = d.description;
  }
  if ('external_url' in d) {
    if (!(d.external_url == null || assetUrl(d.external_url))) return undefined;
    out.external_url = d.external_url;
  }
  if ('attributes' in d) {
    const list = d.attributes;
    if (list == null) out.attributes = list;
    else {
      if (!Array.isArray(list) || list.length > 100) return undefined;
      const attributes: Obj[] = [];
      for (const a of list) {
        const checked = attribute(a);
        if (!checked) return undefined;
        attributes.push(checked);
      }
      out.attributes = attributes;
    }
  }
  if (typeof d.store_image_on_ipfs !== 'boolean') return undefined;
  out.store_image_on_ipfs = d.store_image_on_ipfs;
  return out;
}

/** The body as createAssetBody would give it when it holds nothing zod would refuse; else null. */
export function quickAssetBody(body: unknown): AssetParams | null {
  if (!isObject(body)) return null;
  const user_uid = text(body.user_uid, 32);
  const collection_uid = text(body.collection_uid, 32);
  const asset_external_id = text(body.asset_external_id, 255);
  if (user_uid === undefined || collection_uid === undefined || asset_external_id === undefined) return null;
  const out: Obj = { user_uid, collection_uid, asset_external_id };
  if ('sale_price_in_usd' in body) {
    const price = body.sale_price_in_usd;
    if (!(price == null || (typeof price === 'number' && Number.isFinite(price) && price >= 0))) return null;
    out.sale_price_in_usd = price;
  }
  const data = assetData(body.data);
  if (!data) return null;
  out.data = data;
  return out as unknown as AssetParams;
}
