// docs/api.md's example answers are the service's own. Each ```json block of answers is named by the
// comment before it (`<!-- answers: NAME… -->`, one name per answer, each answer a `STATUS {…}` or a
// bare `{…}`); this test sends the request behind each name and compares: the status, the keys in
// their order, codes, types, field names and messages exactly, and ids, times and addresses by their
// form. An answer on the page outside such a block (other than a schematic one with a <placeholder>)
// fails the test, so a new example cannot go unchecked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestService, type TestService } from '../helpers/service.js';
import { createCollection } from '../../src/services/collections/collections.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');

interface Example {
  name: string;
  status: number | null;
  body: unknown;
}

/** The named examples, in the page's order. */
function examples(): Example[] {
  const out: Example[] = [];
  for (const m of doc.matchAll(/<!-- answers: ([\w\s-]+?) -->\n```json\n([\s\S]*?)\n```/g)) {
    const names = m[1].split(/\s+/);
    // One answer per line that starts with a status or a brace; other lines continue the one before.
    const answers: string[] = [];
    for (const line of m[2].split('\n'))
      if (/^(\d{3} )?\{/.test(line)) answers.push(line);
      else answers[answers.length - 1] += `\n${line}`;
    assert.equal(answers.length, names.length, `"${m[1]}": ${answers.length} answers for ${names.length} names`);
    answers.forEach((text, i) => {
      const status = /^(\d{3}) /.exec(text);
      out.push({ name: names[i], status: status ? Number(status[1]) : null, body: JSON.parse(status ? text.slice(4) : text) });
    });
  }
  return out;
}

/** Values compared exactly; the rest by their form. */
const EXACT = new Set(['success', 'type', 'code', 'field_name', 'message', 'network', 'chain_id', 'email', 'user_external_id']);
const FORMS: [RegExp, string][] = [
  [/^\d{12}$/, 'a uid'],
  [/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a time'],
  [/^0x[0-9a-f]{40}$|^0x[0-9a-f]{4}…[0-9a-f]{5}$/, 'an address'],
];

/** Differences between an example and a real answer, as paths. */
function differences(example: unknown, real: unknown, at = '', key = ''): string[] {
  if (Array.isArray(example)) {
    if (!Array.isArray(real)) return [`${at}: an array in the example, ${JSON.stringify(real)} answered`];
    if (example.length && !real.length) return [`${at}: entries in the example, none answered`];
    return example.flatMap((e, i) => differences(e, real[Math.min(i, real.length - 1)], `${at}[${i}]`, key));
  }
  if (example && typeof example === 'object') {
    if (!real || typeof real !== 'object' || Array.isArray(real)) return [`${at}: an object in the example, ${JSON.stringify(real)} answered`];
    const [ek, rk] = [Object.keys(example), Object.keys(real)];
    if (ek.join() !== rk.join()) return [`${at}: keys ${ek.join(', ')} in the example, ${rk.join(', ')} answered`];
    return ek.flatMap((k) => differences((example as Record<string, unknown>)[k], (real as Record<string, unknown>)[k], `${at}.${k}`, k));
  }
  if (EXACT.has(key) || example === null || typeof example === 'boolean')
    return example === real ? [] : [`${at}: ${JSON.stringify(example)} in the example, ${JSON.stringify(real)} answered`];
  if (typeof example !== typeof real) return [`${at}: a ${typeof example} in the example, ${JSON.stringify(real)} answered`];
  if (typeof example === 'string') {
    // An address inside a longer string (an explorer URL, a QR code) is compared with the address masked.
    const mask = (s: string) => s.replace(/0x[0-9a-f]{4}…[0-9a-f]{5}|0x[0-9a-f]{40}/g, '0x…').replace(/:\/\/[^/]+/, '://host');
    for (const [form, what] of FORMS)
      if (form.test(example)) return form.test(real as string) ? [] : [`${at}: ${what} in the example, ${JSON.stringify(real)} answered`];
    if (example.includes('…'))
      return mask(example) === mask(real as string) ? [] : [`${at}: ${JSON.stringify(example)} in the example, ${JSON.stringify(real)} answered`];
  }
  return [];
}

describe("docs/api.md's example answers", () => {
  let t: TestService;
  const answers = new Map<string, { status: number; body: unknown }>();
  before(async () => {
    t = await startTestService('sqlite');
    const app = await t.newApp();
    const fixed = await t.newCollection(app.uid, false);
    const editable = await t.newCollection(app.uid, true);
    const keep = async (name: string, r: Promise<{ status: number; body: unknown }>) => {
      const { status, body } = await r;
      answers.set(name, { status, body });
      return body as { data: { uid: string } };
    };
    await keep('user-not-found', app.api.get('/user/000000000000'));
    const user = (await keep('user-created', app.api.post('/user', { email: 'player@example.com', user_external_id: 'p-1' }))).data.uid;
    await keep('user-exists', app.api.post('/user', { email: 'player@example.com', user_external_id: 'p-2' }));
    await keep('user-none', app.api.get('/user?email=nobody@example.com'));
    const asset = (collection: string, id: string, data: Record<string, unknown> = { name: 'Sword' }) => ({
      user_uid: user,
      collection_uid: collection,
      asset_external_id: id,
      sale_price_in_usd: 9.99,
      data: { unique_name: false, image_url: 'https://example.com/sword.png', store_image_on_ipfs: false, ...data },
    });
    await keep('asset-invalid', app.api.post('/asset', asset(fixed, 'bad', { image_url: 'not a url' })));
    await keep('asset-created', app.api.post('/asset', asset(fixed, 'sword-1')));
    await keep('asset-exists', app.api.post('/asset', asset(fixed, 'sword-1')));
    await keep('asset-no-collection', app.api.post('/asset', asset('000000000000', 'sword-2')));
    const minted = async (uid: string) => {
      for (let i = 0; i < 600 && !(await app.api.get(`/asset/${uid}`)).body.data.is_minted; i++) await new Promise((r) => setTimeout(r, 100));
    };
    const fixedAsset = (await app.api.post('/asset', asset(fixed, 'sword-3'))).body.data.uid as string;
    const editableAsset = (await app.api.post('/asset', asset(editable, 'sword-4'))).body.data.uid as string;
    await Promise.all([minted(fixedAsset), minted(editableAsset)]);
    const edit = { data: { name: 'Sword', unique_name: false, image_url: 'https://example.com/sword.png' } };
    await keep('asset-edited', app.api.call('PUT', `/asset/${editableAsset}`, edit));
    await keep('asset-not-editable', app.api.call('PUT', `/asset/${fixedAsset}`, edit));
    await keep('deposit', app.api.get(`/deposit?user_uid=${user}&collection_uid=${fixed}`));
    const nameless: Record<string, unknown> = { ...asset(fixed, 'sword-11').data };
    delete nameless.name;
    await keep(
      'asset-batch',
      app.api.post('/asset/batch', { assets: [asset(fixed, 'sword-10'), asset(fixed, 'sword-1'), { ...asset(fixed, 'sword-11'), data: nameless }] }),
    );
    await keep('asset-batch-too-many', app.api.post('/asset/batch', { assets: Array.from({ length: 101 }, (_, i) => asset(fixed, `many-${i}`)) }));
    const { uid: badges } = await createCollection(t.svc.ctx, app.uid, { name: 'Badges', symbol: 'BDG', editable: false, soulbound: true });
    const badge = (await app.api.post('/asset', asset(badges, 'badge-1'))).body.data.uid as string;
    await minted(badge);
    await keep(
      'transfer-soulbound',
      app.api.post('/transfer', { asset_uid: badge, from_user_uid: user, to_address: '0x000000000000000000000000000000000000dEaD' }),
    );
    await keep('user-with-wallet', app.api.get(`/user/${user}`));
    // Items: an ERC-1155 collection's; what is answered before anything reaches the chain.
    const items = await createCollection(t.svc.ctx, app.uid, { name: 'Potions', symbol: 'POT', editable: false, standard: 'ERC1155' });
    const potion = { name: 'Healing potion', image_url: 'https://example.com/potion.png', store_image_on_ipfs: false };
    const item = (
      await keep('item-created', app.api.post('/item', { collection_uid: items.uid, item_external_id: 'potion-heal', max_supply: 1000, data: potion }))
    ).data.uid;
    await keep('item-mint-created', app.api.post('/item/mint', { item_uid: item, to_user_uid: user, amount: 5, nonce: 1 }));
    await keep('item-max-supply', app.api.post('/item/mint', { item_uid: item, to_user_uid: user, amount: 996, nonce: 2 }));
    await keep('item-insufficient', app.api.post('/item/burn', { item_uid: item, from_user_uid: user, amount: 1 }));
    const admin = await fetch(`${t.svc.url}/admin/v1/apps`);
    answers.set('admin-no-token', { status: admin.status, body: await admin.json() });
  });
  after(() => t?.stop());

  it('every answer on the page is a named example', () => {
    const named = examples();
    assert.ok(named.length >= 13, `${named.length} examples found`);
    const blocks = [...doc.matchAll(/<!-- answers: [\w\s-]+? -->\n```json\n[\s\S]*?\n```/g)].map((m) => [m.index!, m.index! + m[0].length]);
    for (const m of doc.matchAll(/\{"success"[^\n]*/g)) {
      const inside = blocks.some(([from, to]) => m.index! >= from && m.index! < to);
      assert.ok(inside || m[0].includes('<'), `an answer outside the checked examples: ${m[0]}`);
    }
    assert.deepEqual(
      named.map((e) => e.name).filter((n) => !answers.has(n)),
      [],
      'every example has its request in this test',
    );
  });

  it('each example is what the service answers', () => {
    const wrong: string[] = [];
    for (const e of examples()) {
      const real = answers.get(e.name);
      if (!real) continue;
      if (e.status !== null && e.status !== real.status) wrong.push(`${e.name}: ${e.status} in the example, ${real.status} answered`);
      for (const d of differences(e.body, real.body)) wrong.push(`${e.name}${d}`);
    }
    assert.deepEqual(wrong, []);
  });
});
