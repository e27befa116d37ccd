// What reading a request body costs beside JSON.parse: parseJsonBody (amount literals kept exactly) on a
// POST /v1/asset body and a reward allocation, and the UTF-8 check before decoding. In-process, no
// service: interleaved rounds, the best of each (a shared machine's noise hits both sides alike).
//   node --import tsx bench/json-body.ts
import { performance } from 'node:perf_hooks';
import { bodyText, parseJsonBody } from '../src/http/kit/json-body.js';
import { emit } from './lib.js';

const asset = JSON.stringify({
  user_uid: '816379099131',
  collection_uid: '816379099132',
  asset_external_id: 'sword-1-3f9a2c',
  sale_price_in_usd: 9.99,
  data: {
    name: 'Sword of the north',
    unique_name: false,
    image_url: 'https://example.com/images/sword.png',
    store_image_on_ipfs: false,
    description: 'A sword forged in the north.',
    attributes: [
      { trait_type: 'power', value: 9 },
      { trait_type: 'kind', value: 'blade', display_type: 'string' },
    ],
  },
});
const allocate = '{"reward_uid":"816379099133","to_user_uid":"816379099131","amount":1.5,"nonce":"n-1"}';

/** ns per call, after a warm-up. */
function time(f: () => unknown, n = 100_000): number {
  for (let i = 0; i < 20_000; i++) f();
  const t = performance.now();
  for (let i = 0; i < n; i++) f();
  return ((performance.now() - t) * 1e6) / n;
}

function compare(a: () => unknown, b: () => unknown): [number, number] {
  let [ta, tb] = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
  for (let round = 0; round < 5; round++) {
    ta = Math.min(ta, time(a));
    tb = Math.min(tb, time(b));
  }
  return [ta, tb];
}

const [assetNs, assetBase] = compare(
  () => parseJsonBody(asset),
  () => JSON.parse(asset),
);
const [allocateNs, allocateBase] = compare(
  () => parseJsonBody(allocate, ['amount']),
  () => JSON.parse(allocate),
);
const bytes = Buffer.from(asset);
const [utf8Ns, decodeNs] = compare(
  () => bodyText(bytes),
  () => bytes.toString('utf8'),
);
emit({
  bench: 'json-body',
  asset_ns: Math.round(assetNs),
  asset_ratio: +(assetNs / assetBase).toFixed(3),
  allocate_ns: Math.round(allocateNs),
  allocate_ratio: +(allocateNs / allocateBase).toFixed(3),
  utf8_check_and_decode_ns: Math.round(utf8Ns),
  decode_ns: Math.round(decodeNs),
});
