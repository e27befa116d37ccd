// Creating an asset through the public API, as a test's setup step.
import assert from 'node:assert/strict';
import type { ApiClient } from './env.js';

/** Creates an asset for `user` named after its external id (answered 201) and returns its uid. */
export async function newAsset(api: ApiClient, user: string, collection: string, externalId: string): Promise<string> {
  const r = await api.post('/asset', {
    user_uid: user,
    collection_uid: collection,
    asset_external_id: externalId,
    data: { name: externalId, unique_name: false, image_url: 'https://example.com/a.png', store_image_on_ipfs: false },
  });
  assert.equal(r.status, 201, r.raw);
  return r.body.data.uid as string;
}
