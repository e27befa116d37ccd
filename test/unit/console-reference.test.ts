// The console's number formats and the API reference's reading of an OpenAPI document, without a browser.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decimal, wei } from '../../console/src/format.js';
import { constraints, type Document, groups, successData, typeName } from '../../console/src/docs/openapi.js';

describe('console formats', () => {
  it('writes wei in the chain currency exactly, or rounded up to the decimals asked', () => {
    assert.equal(wei('47188230180000000'), '0.04718823018 ETH');
    assert.equal(wei('47188230180000000', 'ETH', 4), '0.0472 ETH');
    assert.equal(wei('60000000000000000', 'ETH', 4), '0.06 ETH');
    assert.equal(wei('1', 'POL', 4), '0.0001 POL');
    assert.equal(wei('1000000000000000000000'), '1,000 ETH');
    assert.equal(decimal(1e-18), '0.000000000000000001');
  });
});

const doc: Document = {
  info: { title: 'T', version: '1' },
  paths: {
    '/v1/asset': {
      post: {
        operationId: 'createAsset',
        tags: ['assets'],
        responses: {
          '201': { content: { 'application/json': { schema: { type: 'object', properties: { data: { $ref: '#/components/schemas/Created' } } } } } },
        },
      },
      get: { operationId: 'listAssets', tags: ['assets'] },
    },
    '/admin/v1/apps/{uid}/webhook': { put: { operationId: 'setWebhook', tags: ['admin', 'webhooks'] } },
    '/admin/v1/apps': { get: { operationId: 'listApps', tags: ['admin'] } },
  },
  components: { schemas: { Created: { type: 'object', properties: { uid: { type: 'string' } } } } },
};

describe('API reference', () => {
  it('groups the App API by resource and the management API by subject: paths in the document order, GET first on a path', () => {
    assert.deepEqual(
      groups(doc).map((g) => [g.title, g.endpoints.map((e) => `${e.method} ${e.id}`)]),
      [
        ['Assets', ['get listAssets', 'post createAsset']],
        ['Management: Webhooks', ['put setWebhook']],
        ['Management: Apps', ['get listApps']],
      ],
    );
  });

  it('names types and rules as a reader says them', () => {
    assert.equal(typeName({ anyOf: [{ type: 'number' }, { type: 'string' }] }), 'number or string');
    assert.equal(typeName({ type: 'array', items: { $ref: '#/components/schemas/Asset' } }), 'array of Asset');
    assert.equal(typeName({ type: 'integer', nullable: true }), 'integer or null');
    assert.deepEqual(constraints({ type: 'string', minLength: 1, maxLength: 32 }), ['1–32 characters']);
    assert.deepEqual(constraints({ type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 }), []);
    assert.deepEqual(constraints({ type: 'string', enum: ['a', 'b'], default: 'a' }), ['one of "a", "b"', 'default "a"']);
  });

  it("reads a success answer's data through the envelope", () => {
    const op = doc.paths['/v1/asset'].post!;
    assert.deepEqual(successData(doc, op), { status: '201', schema: { $ref: '#/components/schemas/Created' } });
    assert.equal(successData(doc, doc.paths['/admin/v1/apps'].get!), null);
  });
});
