// The contract arguments for token URIs (src/chain/token-uri.ts): what the service records as an asset's
// token_uri must be exactly what MintworksCollection.tokenURI prints back, so anything the contract
// cannot reproduce is refused. The chain side (the contract's base32) is tested against anvil in
// test/chain/contracts.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { decodeFunctionData, encodeFunctionData, getAddress, zeroHash, type Address } from 'viem';
import { CID } from 'multiformats/cid';
import { base58btc } from 'multiformats/bases/base58';
import * as Digest from 'multiformats/hashes/digest';
import { identity } from 'multiformats/hashes/identity';
import { sha512 } from 'multiformats/hashes/sha2';
import { artifact } from '../../src/chain/artifacts.js';
import { cidArg, mintBatchCalldata, mintGasFor, setTokenCidCalldata, tokenUriOf } from '../../src/chain/token-uri.js';
import { CHUNK_SIZE, cidOfBytes } from '../../src/metadata/unixfs.js';

const { abi } = artifact('MintworksCollection');
const sha256 = (b: Uint8Array) => crypto.createHash('sha256').update(b).digest();
const RAW = 0x55;
const DAG_PB = 0x70;
const DAG_CBOR = 0x71;
const cidOf = (codec: number, digest: Uint8Array) => CID.createV1(codec, Digest.create(0x12, digest));
const A: Address = getAddress('0x00000000000000000000000000000000000000a1');
const B: Address = getAddress('0x00000000000000000000000000000000000000b2');

describe('cidArg', () => {
  it('null and empty mean baseURI + id: the zero digest', () => {
    assert.deepEqual(cidArg(null), { digest: zeroHash, dagPb: false });
    assert.deepEqual(cidArg(''), { digest: zeroHash, dagPb: false });
    assert.equal(tokenUriOf({ digest: zeroHash, dagPb: false }), null);
  });

  it('a raw CID (known Kubo vector) gives its digest, dagPb false', async () => {
    // `ipfs add --cid-version 1` of "hello world" (no newline).
    const uri = 'ipfs://bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';
    const arg = cidArg(uri);
    assert.equal(arg.digest, `0x${sha256(Buffer.from('hello world')).toString('hex')}`);
    assert.equal(arg.dagPb, false);
    assert.equal(tokenUriOf(arg), uri);
    assert.equal(`ipfs://${await cidOfBytes(Buffer.from('hello world'))}`, uri);
  });

  it('round trip for the CIDs the service computes: raw (one chunk) and dag-pb (larger)', async () => {
    const sizes = [0, 1, 100, 4096, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 3 * CHUNK_SIZE + 17];
    for (const size of sizes) {
      const bytes = crypto.randomBytes(size);
      const cid = await cidOfBytes(bytes);
      const uri = `ipfs://${cid}`;
      const arg = cidArg(uri);
      assert.equal(arg.dagPb, size > CHUNK_SIZE, `size ${size}: ${cid}`);
      assert.equal(arg.digest, `0x${Buffer.from(cid.multihash.digest).toString('hex')}`);
      assert.equal(tokenUriOf(arg), uri, `size ${size}`);
      if (size <= CHUNK_SIZE) assert.equal(arg.digest, `0x${sha256(bytes).toString('hex')}`);
    }
  });

  it('round trip for arbitrary digests of both codecs', () => {
    for (let i = 0; i < 200; i++) {
      const codec = i % 2 ? DAG_PB : RAW;
      const uri = `ipfs://${cidOf(codec, crypto.randomBytes(32))}`;
      const arg = cidArg(uri);
      assert.equal(arg.dagPb, codec === DAG_PB);
      assert.equal(tokenUriOf(arg), uri);
    }
  });

  it('refuses what the contract cannot print back exactly', async () => {
    const digest = crypto.randomBytes(32);
    const v1 = cidOf(RAW, digest);
    const bad: [string, RegExp][] = [
      ['https://example.com/files/abc', /not an ipfs:\/\/ URI/],
      ['ar://doc-2', /not an ipfs:\/\/ URI/],
      ['IPFS://' + v1, /not an ipfs:\/\/ URI/],
      ['ipfs://', /not a CID/],
      ['ipfs://not-a-cid', /not a CID/],
      [`ipfs://${v1}/metadata.json`, /not a CID/],
      [`ipfs://${v1.toString().toUpperCase()}`, /not a CID|canonical/],
      [`ipfs://${v1.toString(base58btc)}`, /canonical/], // same CID, base58btc spelling
      [`ipfs://${cidOf(DAG_PB, digest).toV0()}`, /not a CIDv1/], // Qm…
      [`ipfs://${cidOf(DAG_CBOR, digest)}`, /codec 0x71/],
      [`ipfs://${CID.createV1(RAW, await sha512.digest(Buffer.from('x')))}`, /sha2-256/],
      [`ipfs://${CID.createV1(RAW, identity.digest(Buffer.from('x')))}`, /sha2-256/],
      [`ipfs://${cidOf(RAW, new Uint8Array(32))}`, /zero digest/],
    ];
    for (const [uri, why] of bad) {
      assert.throws(
        () => cidArg(uri),
        (err: Error) => {
          assert.match(err.message, /cannot be stored on chain/, uri);
          assert.match(err.message, why, uri);
          return true;
        },
      );
      assert.throws(() => mintBatchCalldata([{ to: A, tokenId: 1, tokenUri: uri }]), /cannot be stored on chain/);
      assert.throws(() => setTokenCidCalldata(1n, uri), /cannot be stored on chain/);
      assert.throws(() => mintGasFor([{ to: `0x${'11'.repeat(20)}`, tokenId: 1, tokenUri: uri }]), /cannot be stored on chain/);
    }
  });
});

describe('calldata', () => {
  it('mintBatchCalldata encodes recipients, ids, digests and codec flags in order', () => {
    const raw = cidOf(RAW, crypto.randomBytes(32));
    const pb = cidOf(DAG_PB, crypto.randomBytes(32));
    const data = mintBatchCalldata([
      { to: A, tokenId: 7, tokenUri: `ipfs://${raw}` },
      { to: B, tokenId: 8n, tokenUri: null },
      { to: A, tokenId: 2n ** 200n, tokenUri: `ipfs://${pb}` },
    ]);
    const { functionName, args } = decodeFunctionData({ abi, data });
    assert.equal(functionName, 'mintBatch');
    assert.deepEqual(args, [
      [A, B, A],
      [7n, 8n, 2n ** 200n],
      [`0x${Buffer.from(raw.multihash.digest).toString('hex')}`, zeroHash, `0x${Buffer.from(pb.multihash.digest).toString('hex')}`],
      [false, false, true],
    ]);
  });

  it('mintBatchCalldata is what the ABI encoder writes, for batches of every size and mixed URIs', () => {
    const uris = [null, `ipfs://${cidOf(RAW, crypto.randomBytes(32))}`, `ipfs://${cidOf(DAG_PB, crypto.randomBytes(32))}`];
    for (const n of [0, 1, 2, 7, 400]) {
      const items = Array.from({ length: n }, (_, i) => ({
        // Checksummed and lower-case recipients alike; ids small, large and up to the uint256 maximum.
        to: i % 2 ? getAddress(`0x${crypto.randomBytes(20).toString('hex')}`) : (`0x${crypto.randomBytes(20).toString('hex')}` as Address),
        tokenId: i === n - 1 ? 2n ** 256n - 1n : i % 3 ? BigInt(i) * 2n ** 70n : i + 1,
        tokenUri: uris[i % uris.length],
      }));
      const cids = items.map((i) => cidArg(i.tokenUri));
      const expected = encodeFunctionData({
        abi,
        functionName: 'mintBatch',
        args: [items.map((i) => i.to), items.map((i) => BigInt(i.tokenId)), cids.map((c) => c.digest), cids.map((c) => c.dagPb)],
      });
      assert.equal(mintBatchCalldata(items), expected, `a batch of ${n}`);
    }
    assert.throws(() => mintBatchCalldata([{ to: '0x1234' as Address, tokenId: 1, tokenUri: null }]), /not an address/);
    assert.throws(() => mintBatchCalldata([{ to: A, tokenId: -1n, tokenUri: null }]), /not a uint256/);
    assert.throws(() => mintBatchCalldata([{ to: A, tokenId: 2n ** 256n, tokenUri: null }]), /not a uint256/);
  });

  it('setTokenCidCalldata encodes id, digest and codec flag; null resets to baseURI + id', () => {
    const pb = cidOf(DAG_PB, crypto.randomBytes(32));
    let d = decodeFunctionData({ abi, data: setTokenCidCalldata(5, `ipfs://${pb}`) });
    assert.equal(d.functionName, 'setTokenCID');
    assert.deepEqual(d.args, [5n, `0x${Buffer.from(pb.multihash.digest).toString('hex')}`, true]);
    d = decodeFunctionData({ abi, data: setTokenCidCalldata(5n, null) });
    assert.deepEqual(d.args, [5n, zeroHash, false]);
  });

  it('mintGasFor grows with tokens, CIDs and dag-pb CIDs', () => {
    const raw = `ipfs://${cidOf(RAW, crypto.randomBytes(32))}`;
    const pb = `ipfs://${cidOf(DAG_PB, crypto.randomBytes(32))}`;
    const to = (i: number) => `0x${(i + 1).toString(16).padStart(40, '0')}` as `0x${string}`;
    const dev = mintGasFor([{ to: to(0), tokenId: 1, tokenUri: null }]);
    const one = mintGasFor([{ to: to(0), tokenId: 1, tokenUri: raw }]);
    const onePb = mintGasFor([{ to: to(0), tokenId: 1, tokenUri: pb }]);
    assert.ok(dev < one && one < onePb);
    assert.ok(onePb < 200_000n, `${onePb}`);
    // A hundred fresh holders: every recipient's balance slot counted.
    const hundred = mintGasFor(Array.from({ length: 100 }, (_, i) => ({ to: to(i), tokenId: i + 1, tokenUri: raw })));
    assert.ok(hundred > 100n * 60_000n && hundred < 100n * 100_000n, `${hundred}`);
    // A hundred tokens for one holder: its balance slot once.
    const oneHolder = mintGasFor(Array.from({ length: 100 }, (_, i) => ({ to: to(0), tokenId: i + 1, tokenUri: raw })));
    assert.ok(oneHolder < hundred - 99n * 20_000n, `${oneHolder}`);
    // dag-pb: the codec bitmap word once per 256 ids.
    const pbs = mintGasFor(Array.from({ length: 100 }, (_, i) => ({ to: to(0), tokenId: i + 1, tokenUri: pb })));
    assert.ok(pbs < oneHolder + 100n * 2_000n + 30_000n, `${pbs}`);
    assert.ok(mintGasFor([]) > 0n);
  });
});
