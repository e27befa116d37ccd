// Pure rules of asset metadata storage: image sniffing, what a fetch response means, when an asset needs
// preparing, the Kubo RPC helpers, and the development file store.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { sniffContentType, sniffImage, mediaType } from '../../src/metadata/sniff.js';
import { classifyFetchError, classifyImageResponse, MetadataError } from '../../src/metadata/fetch-image.js';
import { assetDataFromDocument, needsPreparation } from '../../src/metadata/prepare.js';
import { kuboAddedCid, kuboAddUrl, publishTargets } from '../../src/metadata/publish.js';
import { FileStore } from '../../src/metadata/store.js';
import { OutboundBlockedError } from '../../src/net/outbound.js';
import { buildMetadata } from '../../src/domain/assets.js';
import { loadConfig } from '../../src/config/config.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const JPEG = Buffer.from('ffd8ffe000104a464946', 'hex');
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1');
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 ')]);
const box = (major: string, ...compat: string[]) => {
  const size = 16 + 4 * compat.length;
  return Buffer.concat([Buffer.from([0, 0, 0, size]), Buffer.from('ftyp' + major), Buffer.alloc(4), ...compat.map((c) => Buffer.from(c))]);
};
const AVIF = box('avif', 'mif1', 'miaf');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>');

describe('sniffImage', () => {
  it('recognises png, jpeg, gif, webp, avif and svg by their bytes', () => {
    assert.equal(sniffImage(PNG), 'image/png');
    assert.equal(sniffImage(JPEG), 'image/jpeg');
    assert.equal(sniffImage(GIF), 'image/gif');
    assert.equal(sniffImage(Buffer.from('GIF87a......')), 'image/gif');
    assert.equal(sniffImage(WEBP), 'image/webp');
    assert.equal(sniffImage(AVIF), 'image/avif');
    assert.equal(sniffImage(box('mif1', 'avif')), 'image/avif', 'avif as a compatible brand');
    assert.equal(sniffImage(box('avis')), 'image/avif', 'image sequence');
    assert.equal(sniffImage(SVG), 'image/svg+xml');
    assert.equal(
      sniffImage(Buffer.from('\ufeff<?xml version="1.0"?>\n<!-- made by hand -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n<svg>')),
      'image/svg+xml',
    );
  });

  it('refuses what only looks like an image', () => {
    for (const [what, b] of [
      ['empty', Buffer.alloc(0)],
      ['html', Buffer.from('<!doctype html><html><svg></svg></html>')],
      ['json', Buffer.from('{"image":"x.png"}')],
      ['svg-ish element name', Buffer.from('<svgfoo/>')],
      ['truncated png', PNG.subarray(0, 6)],
      ['mp4 (ftyp, not avif)', box('isom', 'mp41')],
      ['RIFF wave', Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt ')])],
      ['unterminated xml declaration', Buffer.from('<?xml version="1.0"')],
    ] as const) {
      assert.equal(sniffImage(b), null, what);
    }
  });

  it('sniffContentType: images, JSON documents, otherwise binary', () => {
    assert.equal(sniffContentType(PNG), 'image/png');
    assert.equal(sniffContentType(Buffer.from(JSON.stringify({ name: 'x', image: 'ipfs://b' }))), 'application/json');
    assert.equal(sniffContentType(Buffer.from('{not json')), 'application/octet-stream');
    assert.equal(sniffContentType(Buffer.from('hello')), 'application/octet-stream');
  });

  it('mediaType drops parameters and case', () => {
    assert.equal(mediaType('Image/PNG; charset=binary'), 'image/png');
    assert.equal(mediaType(undefined), '');
  });
});

describe('classifyImageResponse / classifyFetchError', () => {
  const res = (status: number, contentType: string | undefined, body: Buffer, truncated = false) => ({
    status,
    headers: (contentType ? { 'content-type': contentType } : {}) as Record<string, string>,
    body,
    truncated,
    url: 'http://img.test/a',
  });
  const err = (r: unknown) => {
    assert.ok(r instanceof MetadataError, 'expected a MetadataError');
    return r;
  };

  it('an image with an image content type is accepted, typed from its bytes', () => {
    const r = classifyImageResponse(res(200, 'image/png', PNG), 1000);
    assert.ok(!(r instanceof MetadataError));
    assert.equal(r.contentType, 'image/png');
    // A mislabelled but real image is typed by what it is.
    const j = classifyImageResponse(res(200, 'image/png', JPEG), 1000);
    assert.ok(!(j instanceof MetadataError) && j.contentType === 'image/jpeg');
  });

  it('404, 410, 403 and other client errors are permanent; 5xx, 408, 429 are transient', () => {
    for (const s of [400, 401, 403, 404, 410, 451])
      assert.equal(err(classifyImageResponse(res(s, 'text/html', Buffer.from('no')), 1000)).permanent, true, String(s));
    for (const s of [408, 429, 500, 502, 503, 504, 599])
      assert.equal(err(classifyImageResponse(res(s, 'text/html', Buffer.from('later')), 1000)).permanent, false, String(s));
    assert.match(err(classifyImageResponse(res(404, undefined, Buffer.alloc(0)), 1000)).message, /HTTP 404/);
  });

  it('not an image (content type or bytes), too large, or a redirect left over: permanent, with the reason', () => {
    assert.match(
      err(classifyImageResponse(res(200, 'text/html; charset=utf-8', Buffer.from('<html>')), 1000)).message,
      /did not answer with an image \(Content-Type: text\/html\)/,
    );
    assert.match(err(classifyImageResponse(res(200, undefined, PNG), 1000)).message, /Content-Type: none/);
    assert.match(err(classifyImageResponse(res(200, 'image/png', Buffer.from('<html>')), 1000)).message, /not a PNG, JPEG, GIF, WebP, AVIF or SVG/);
    assert.match(err(classifyImageResponse(res(200, 'image/png', PNG, true), 1000)).message, /larger than the limit of 1000 bytes/);
    assert.equal(err(classifyImageResponse(res(302, undefined, Buffer.alloc(0)), 1000)).permanent, true);
  });

  it('a guard refusal is permanent; network trouble is transient', () => {
    const blocked = classifyFetchError(new OutboundBlockedError('http://10.0.0.1/', 'private address 10.0.0.1'));
    assert.equal(blocked.permanent, true);
    assert.match(blocked.message, /refused: private address 10\.0\.0\.1/);
    assert.equal(classifyFetchError(new Error('timed out after 15000 ms')).permanent, false);
    assert.equal(classifyFetchError(Object.assign(new Error('connect ECONNREFUSED 1.2.3.4:80'), { code: 'ECONNREFUSED' })).permanent, false);
    assert.equal(classifyFetchError(Object.assign(new Error('getaddrinfo ENOTFOUND x.test'), { code: 'ENOTFOUND' })).permanent, false);
  });
});

describe('preparation rules', () => {
  it('development Apps prepare only to store an image; production Apps always (IPFS documents)', () => {
    assert.equal(needsPreparation('development', false), false);
    assert.equal(needsPreparation('development', true), true);
    assert.equal(needsPreparation('production', false), true);
    assert.equal(needsPreparation('production', true), true);
  });

  it('assetDataFromDocument rebuilds the same document (key order included) with a new image', () => {
    const data = {
      name: 'Sword #7',
      unique_name: false,
      image_url: 'https://img.test/s.png',
      description: 'sharp',
      attributes: [
        { trait_type: 'level', value: 3, display_type: 'boost_number' },
        { trait_type: 'kind', value: 'blade' },
      ],
    };
    const doc = buildMetadata('123456789012', 'Sword #7', data);
    const again = buildMetadata('123456789012', 'Sword #7', assetDataFromDocument(doc), 'ipfs://bafkreiexample');
    assert.deepEqual(Object.keys(again), Object.keys(doc));
    assert.deepEqual({ ...again, image: doc.image }, doc);
    assert.equal(again.image, 'ipfs://bafkreiexample');
    assert.equal(again.org_image_url, 'https://img.test/s.png');
    const bare = buildMetadata('123456789012', 'Plain', { name: 'Plain', unique_name: true, image_url: 'https://img.test/p.png' });
    assert.equal(JSON.stringify(buildMetadata('123456789012', 'Plain', assetDataFromDocument(bare))), JSON.stringify(bare), 'absent optionals stay absent');
  });
});

describe('Kubo RPC and pinning helpers', () => {
  it('the add URL fixes every CID-relevant parameter', () => {
    const u = new URL(kuboAddUrl('http://127.0.0.1:5001'));
    assert.equal(u.pathname, '/api/v0/add');
    assert.equal(u.searchParams.get('cid-version'), '1');
    assert.equal(u.searchParams.get('raw-leaves'), 'true');
    assert.equal(u.searchParams.get('chunker'), 'size-262144');
    assert.equal(u.searchParams.get('hash'), 'sha2-256');
    assert.equal(u.searchParams.get('pin'), 'true');
  });

  it('reads the root CID from an NDJSON add answer', () => {
    assert.equal(kuboAddedCid('{"Name":"a","Hash":"bafkreia","Size":"3"}\n'), 'bafkreia');
    assert.equal(kuboAddedCid('{"Name":"x","Bytes":262144}\n{"Name":"x","Hash":"bafybeiroot","Size":"9"}\n'), 'bafybeiroot');
    assert.equal(kuboAddedCid('oops'), null);
  });

  it('targets follow the configuration; a pinning URL without its token is a configuration error', () => {
    const base = { DATA_DIR: os.tmpdir() };
    assert.deepEqual(publishTargets(loadConfig(base)), []);
    assert.deepEqual(publishTargets(loadConfig({ ...base, IPFS_API_URL: 'http://127.0.0.1:5001/' })), ['kubo']);
    assert.deepEqual(
      publishTargets(loadConfig({ ...base, IPFS_API_URL: 'http://127.0.0.1:5001', PINNING_SERVICE_URL: 'https://pins.test/', PINNING_SERVICE_TOKEN: 't' })),
      ['kubo', 'pinning'],
    );
    assert.equal(loadConfig({ ...base, IPFS_API_URL: 'http://127.0.0.1:5001/' }).ipfsApiUrl, 'http://127.0.0.1:5001');
    assert.throws(() => loadConfig({ ...base, PINNING_SERVICE_URL: 'https://pins.test' }), /PINNING_SERVICE_TOKEN/);
    assert.equal(loadConfig(base).imageMaxBytes, 20 * 1024 * 1024);
    assert.throws(() => loadConfig({ ...base, IMAGE_MAX_BYTES: 'lots' }), /IMAGE_MAX_BYTES/);
  });
});

describe('FileStore (development Apps)', () => {
  it('names files by sha-256, reads them back verified, refuses bad names and tampered files', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mw-files-'));
    try {
      const store = new FileStore(dir);
      const sha = await store.put(PNG);
      assert.equal(sha, crypto.createHash('sha256').update(PNG).digest('hex'));
      assert.equal(await store.put(PNG), sha, 'idempotent');
      assert.ok((await store.get(sha))!.equals(PNG));
      assert.equal(await store.get('0'.repeat(64)), null);
      assert.equal(await store.get('../../etc/passwd'), null);
      fs.writeFileSync(store.pathOf(sha), Buffer.from('tampered'));
      assert.equal(await store.get(sha), null, 'content no longer matches its name');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
