// quickAssetBody against the zod schema it stands in for: over every field set to values at and around
// each rule's edges, and thousands of bodies with several fields changed at once, whatever the quick
// path accepts, zod accepts too, with the same value (the same keys in the same order); whatever zod
// refuses, the quick path leaves to zod. And the usual bodies do take the quick path.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { quickAssetBody } from '../../src/http/kit/quick-asset-body.js';
import { batchItem, createAssetBody } from '../../src/http/kit/schemas.js';

type Json = unknown;
type Body = Record<string, Json>;

const long = (n: number, c = 'a') => c.repeat(n);
const url = (n: number) => `https://example.com/${long(n - 20)}`; // n characters in all

/** Values at and around the edges of every rule of the schema. */
const PALETTE: Json[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  -1,
  1.5,
  1e308,
  Number.POSITIVE_INFINITY,
  Number.NaN,
  '',
  ' ',
  'x',
  '  x  ',
  '\u200b',
  ' \u200b\u2800 ',
  'a\u0000b',
  'a\ud800b',
  '\ud83d\ude00',
  long(32),
  ` ${long(32)} `,
  long(33),
  long(64),
  long(65),
  long(255),
  long(256),
  long(1024),
  long(1025),
  long(10_000),
  long(10_001),
  'https://example.com/a.png',
  'http://example.com',
  'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi',
  'ftp://example.com/a.png',
  ' https://example.com/a.png',
  'https://example.com/a b.png',
  'https://',
  'not a url',
  url(2048),
  url(2049),
  [],
  {},
  [{}],
  [{ trait_type: 'power', value: 9 }],
  { trait_type: 'power', value: 9 },
];

const attribute = { trait_type: 'power', value: 9, display_type: 'number' };

/** Valid bodies, from the least to the most a client can send. */
const BASES: Body[] = [
  {
    user_uid: '123456789012',
    collection_uid: '210987654321',
    asset_external_id: 'ext-1',
    data: { name: 'Sword', unique_name: false, image_url: 'https://example.com/sword.png', store_image_on_ipfs: false },
  },
  {
    user_uid: ' 123456789012 ',
    collection_uid: '210987654321',
    asset_external_id: '  ext 2  ',
    sale_price_in_usd: 9.99,
    data: {
      name: '  Bench Sword ',
      description: 'A bench item',
      unique_name: true,
      image_url: 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi',
      external_url: 'http://example.com/page',
      attributes: [attribute, { trait_type: 'kind', value: 'blade' }, { trait_type: 'x', value: -0.5, display_type: null }],
      store_image_on_ipfs: true,
    },
  },
  {
    user_uid: '1',
    collection_uid: '2',
    asset_external_id: '3',
    sale_price_in_usd: null,
    data: {
      name: 'n',
      description: null,
      unique_name: false,
      image_url: 'http://a.b',
      external_url: null,
      attributes: null,
      store_image_on_ipfs: false,
    },
  },
];
/** The most attributes there may be (changed in the tests below through the ones above: 100 are slow to vary). */
const MOST_ATTRIBUTES: Body = {
  user_uid: '1',
  collection_uid: '2',
  asset_external_id: '3',
  sale_price_in_usd: 0,
  data: { name: 'n', unique_name: false, image_url: 'http://a.b', attributes: Array.from({ length: 100 }, () => attribute), store_image_on_ipfs: false },
};

/** Every path of `value` that holds something (a key of an object, an index of an array). */
function paths(value: Json, at: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const keys: (string | number)[] = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return keys.flatMap((k) => [[...at, k], ...paths((value as Record<string | number, Json>)[k], [...at, k])]);
}

/** `body` with the value at `path` replaced (or deleted, for undefined), not changing `body`. */
function withValue(body: Body, path: (string | number)[], v: Json): Body {
  const copy = structuredClone(body);
  let o = copy as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) o = o[k] as Record<string | number, Json>;
  const last = path[path.length - 1];
  if (v === undefined && !Array.isArray(o)) delete o[last];
  else o[last] = v;
  return copy;
}

/** The quick path agrees with zod on `body`; says whether it took it. */
function agrees(body: Json): boolean {
  const quick = quickAssetBody(body);
  const byZod = createAssetBody.safeParse(body);
  if (quick === null) return false;
  assert.ok(byZod.success, `the quick path took a body zod refuses: ${JSON.stringify(body)} (${byZod.error?.issues[0]?.message})`);
  assert.deepStrictEqual(quick, byZod.data);
  assert.equal(JSON.stringify(quick), JSON.stringify(byZod.data), 'the same keys in the same order');
  return true;
}

/** A deterministic generator (mulberry32), so a failure is found again. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('quickAssetBody (POST /asset without zod when nothing is unusual)', () => {
  it('takes the usual bodies, with the value zod gives', () => {
    for (const body of [...BASES, MOST_ATTRIBUTES]) assert.ok(agrees(body), `not taken: ${JSON.stringify(body)}`);
    const tooMany = structuredClone(MOST_ATTRIBUTES);
    (tooMany.data as { attributes: unknown[] }).attributes.push(attribute);
    assert.equal(quickAssetBody(tooMany), null);
    assert.equal(createAssetBody.safeParse(tooMany).success, false);
  });

  it('agrees with zod with any one field set to any value of the palette, or an unknown field added', () => {
    let taken = 0;
    let tried = 0;
    for (const base of BASES) {
      for (const path of paths(base)) {
        for (const v of PALETTE) {
          tried++;
          if (agrees(withValue(base, path, v))) taken++;
        }
        const parent = path.slice(0, -1);
        tried++;
        if (agrees(withValue(base, [...parent, 'unknown_field'], 1))) taken++;
      }
    }
    // Neither all (the palette is mostly refused) nor none (some values are valid for most fields).
    assert.ok(taken > 100 && taken < tried, `${taken} of ${tried} taken`);
  });

  it('agrees with zod on 1,500 bodies with 1 to 4 fields changed at once', () => {
    const next = random(44);
    let taken = 0;
    for (let n = 0; n < 1500; n++) {
      let body = BASES[Math.floor(next() * BASES.length)];
      const changes = 1 + Math.floor(next() * 4);
      for (let c = 0; c < changes; c++) {
        const all = paths(body);
        if (all.length === 0) break;
        body = withValue(body, all[Math.floor(next() * all.length)], PALETTE[Math.floor(next() * PALETTE.length)]);
      }
      if (agrees(body)) taken++;
    }
    assert.ok(taken > 50, `${taken} taken`);
  });

  it('leaves what is not an object to zod', () => {
    for (const v of [null, undefined, 1, 'x', [], [BASES[0]]]) {
      assert.equal(quickAssetBody(v), null);
      assert.equal(createAssetBody.safeParse(v).success, false);
    }
  });

  it('a batch item gets the same value or the same refusal as before', () => {
    assert.deepStrictEqual(batchItem(BASES[1]), createAssetBody.parse(BASES[1]));
    assert.deepStrictEqual(batchItem(withValue(BASES[1], ['data', 'name'], ' \u200b ')), {
      error: { code: 'invalid', message: 'data.name: This field may not be blank.' },
    });
  });
});
