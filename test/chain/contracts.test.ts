// Integration test of the Solidity contracts against a private anvil node.
// Run: node --import tsx --test test/chain/contracts.test.ts
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  hexToBytes,
  http,
  keccak256,
  parseEther,
  parseEventLogs,
  toFunctionSelector,
  zeroAddress,
  zeroHash,
  type Abi,
  type Address,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import { cidArg, mintBatchCalldata, mintGasFor, setTokenCidCalldata } from '../../src/chain/token-uri.js';
import { CHUNK_SIZE, cidOfBytes } from '../../src/metadata/unixfs.js';
import { FORWARD_REQUEST_TYPES, forwarderDomain } from '../../src/chain/forward.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ANVIL = join(root, 'node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil');
// anvil's default, pre-funded accounts derive from this mnemonic.
const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

type Artifact = { contractName: string; abi: Abi; bytecode: Hex };
/** The collection options' constructor arguments when none is set: not soulbound, no royalty, no contract URI. */
const NO_OPTIONS = [false, zeroAddress, 0n, ''] as const;
const load = (name: string): Artifact => JSON.parse(readFileSync(join(root, 'build/contracts', `${name}.json`), 'utf8')) as Artifact;

let anvil: ChildProcess | undefined;
let pub: PublicClient;
let wallet: WalletClient;
const operator = mnemonicToAccount(ANVIL_MNEMONIC); // index 0, funded
let Collection: Artifact, Forwarder: Artifact, Rewards: Artifact, Items: Artifact;

const fresh = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());
const freshAddress = (): Address => fresh().address;

/** Spawns anvil on an OS-assigned port and resolves with its RPC URL once it listens. */
function startAnvil(): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(ANVIL, ['--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    anvil = child;
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Listening on ([\d.]+:\d+)/.exec(out);
      if (m) {
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // keep draining so anvil never blocks on a full pipe
        resolvePromise(`http://${m[1]}`);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`anvil exited early (${code}):\n${out}`)));
  });
}

/** Waits for a transaction and asserts it succeeded. */
async function mined(hash: Hex): Promise<TransactionReceipt> {
  const receipt = await pub.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, 'success', `tx ${hash} reverted`);
  return receipt;
}

async function deploy(artifact: Artifact, args: unknown[] = []): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args,
    account: operator,
    chain: foundry,
  });
  const receipt = await mined(hash);
  assert.ok(receipt.contractAddress);
  return receipt.contractAddress;
}

async function send(address: Address, abi: Abi, functionName: string, args: unknown[], gas?: bigint) {
  const hash = await wallet.writeContract({ address, abi, functionName, args, account: operator, chain: foundry, gas });
  return mined(hash);
}

function read<T>(address: Address, abi: Abi, functionName: string, args: unknown[] = []): Promise<T> {
  return pub.readContract({ address, abi, functionName, args }) as Promise<T>;
}

/** Asserts that calling the function (as `from`) reverts with the custom error `errorName`. */
async function expectRevert(address: Address, abi: Abi, functionName: string, args: unknown[], errorName: string, from: Address = operator.address) {
  await assert.rejects(pub.simulateContract({ address, abi, functionName, args, account: from }), (err: unknown) => {
    assert.ok(err instanceof BaseError, String(err));
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    assert.ok(reverted, `expected revert ${errorName}, got: ${err.shortMessage}`);
    assert.equal(reverted.data?.errorName, errorName, err.shortMessage);
    return true;
  });
}

/** Builds and signs an ERC-2771 ForwardRequest (EIP-712) as `signer` for `from`. */
async function forwardRequest(forwarder: Address, signer: PrivateKeyAccount, to: Address, data: Hex, from: Address = signer.address) {
  const nonce = await read<bigint>(forwarder, Forwarder.abi, 'nonces', [from]);
  const { timestamp } = await pub.getBlock();
  const message = { from, to, value: 0n, gas: 300_000n, nonce, deadline: Number(timestamp) + 3600, data };
  const signature = await signer.signTypedData({
    domain: forwarderDomain(foundry.id, forwarder),
    types: FORWARD_REQUEST_TYPES,
    primaryType: 'ForwardRequest',
    message,
  });
  const { nonce: _nonce, ...rest } = message; // the on-chain struct carries no nonce
  return { ...rest, signature };
}

before(async () => {
  // No-op when the build is up to date (hash cache).
  execFileSync(process.execPath, [join(root, 'scripts/build-contracts.mjs')], { stdio: 'inherit' });
  Collection = load('MintworksCollection');
  Forwarder = load('MintworksForwarder');
  Rewards = load('MintworksRewards');
  Items = load('MintworksItems');
  const url = await startAnvil();
  // anvil automines: poll receipts fast. This also keeps viem's leftover poll timer short, so the
  // process exits right after the tests instead of idling for the default 4 s interval.
  pub = createPublicClient({ chain: foundry, transport: http(url), pollingInterval: 50 });
  wallet = createWalletClient({ chain: foundry, transport: http(url) });
  assert.equal(await pub.getChainId(), foundry.id);
  assert.ok((await pub.getBalance({ address: operator.address })) > parseEther('1'));
});

after(async () => {
  if (!anvil || anvil.exitCode !== null) return;
  const exited = new Promise((r) => anvil!.once('exit', r));
  anvil.kill('SIGTERM');
  await exited;
});

describe('MintworksCollection + MintworksForwarder', () => {
  let forwarder: Address;
  let collection: Address; // non-editable
  let editableCollection: Address;
  const BASE = 'https://meta.example/c1/';
  const holders = [freshAddress(), freshAddress(), freshAddress()];
  // Documents as the service stores them; their CIDs are what `ipfs add --cid-version 1` prints.
  let doc2: string, doc100: string, doc101Large: string;

  it('deploys the forwarder and collections', async () => {
    forwarder = await deploy(Forwarder);
    collection = await deploy(Collection, ['Mint One', 'M1', BASE, false, forwarder, [], ...NO_OPTIONS]);
    editableCollection = await deploy(Collection, ['Mint Two', 'M2', 'ipfs://base/', true, forwarder, [], ...NO_OPTIONS]);
    assert.equal(await read(collection, Collection.abi, 'owner'), operator.address);
    assert.equal(await read(collection, Collection.abi, 'isOperator', [operator.address]), true);
    assert.equal(await read(collection, Collection.abi, 'isOperator', [holders[0]]), false);
    assert.equal(await read(collection, Collection.abi, 'editable'), false);
    assert.equal(await read(editableCollection, Collection.abi, 'editable'), true);
    assert.equal(await read(collection, Collection.abi, 'isTrustedForwarder', [forwarder]), true);
    assert.equal(await read(collection, Collection.abi, 'supportsInterface', ['0x49064906']), true);
    assert.equal(await read(collection, Collection.abi, 'supportsInterface', ['0x80ac58cd']), true); // ERC-721
    assert.equal(await read(collection, Collection.abi, 'supportsInterface', ['0x5b5e139f']), true); // metadata
    assert.equal(await read(collection, Collection.abi, 'supportsInterface', ['0xffffffff']), false);
    doc2 = await docUri(jsonDocument(2, 300));
    doc100 = await docUri(jsonDocument(100, 1_000));
    doc101Large = await docUri(jsonDocument(101, CHUNK_SIZE + 1));
    assert.match(doc2, /^ipfs:\/\/bafkrei/);
    assert.match(doc101Large, /^ipfs:\/\/bafybei/);
  });

  it('constructor operators get operator rights; only the owner manages them', async () => {
    const op = fresh();
    const c = await deploy(Collection, ['X', 'X', '', false, forwarder, [op.address], ...NO_OPTIONS]);
    assert.equal(await read(c, Collection.abi, 'isOperator', [op.address]), true);
    await expectRevert(c, Collection.abi, 'mint', [op.address, 1n, zeroHash, false], 'NotOperator', holders[0]);
    await expectRevert(c, Collection.abi, 'setOperator', [op.address, false], 'OwnableUnauthorizedAccount', op.address);
    await send(c, Collection.abi, 'setOperator', [op.address, false]);
    assert.equal(await read(c, Collection.abi, 'isOperator', [op.address]), false);
  });

  it('mintBatch mints each id to its recipient', async () => {
    const items = holders.map((to, i) => ({ to, tokenId: i + 1, tokenUri: i === 1 ? doc2 : null }));
    await sendData(collection, mintBatchCalldata(items));
    for (const [i, h] of holders.entries()) {
      assert.equal(await read(collection, Collection.abi, 'ownerOf', [BigInt(i + 1)]), h);
    }
  });

  it('tokenURI is baseURI + id, or the per-token IPFS CID; reverts for unknown ids', async () => {
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [1n]), `${BASE}1`);
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [2n]), doc2);
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [3n]), `${BASE}3`);
    await expectRevert(collection, Collection.abi, 'tokenURI', [99n], 'ERC721NonexistentToken');
    // Without a base URI a token with no CID has an empty URI (ERC-721 metadata convention).
    const bare = await deploy(Collection, ['Bare', 'B', '', false, forwarder, [], ...NO_OPTIONS]);
    await send(bare, Collection.abi, 'mint', [holders[0], 1n, zeroHash, false]);
    assert.equal(await read(bare, Collection.abi, 'tokenURI', [1n]), '');
  });

  it('tokenURI prints exactly the CID the service computed, for 50 documents of all sizes (raw and dag-pb)', async (t: TestContext) => {
    const c = await deploy(Collection, ['Docs', 'DOC', BASE, false, forwarder, [], ...NO_OPTIONS]);
    // Tiny and typical documents, exactly one UnixFS chunk (the largest raw CID), one byte more (the
    // smallest dag-pb root), several chunks, and random sizes (every fifth up to 700 KB).
    const sizes = [
      20,
      64,
      65,
      100,
      255,
      256,
      1_000,
      1_234,
      4_096,
      10_000,
      65_536,
      100_000,
      CHUNK_SIZE - 1,
      CHUNK_SIZE,
      CHUNK_SIZE + 1,
      CHUNK_SIZE + 2,
      2 * CHUNK_SIZE,
      2 * CHUNK_SIZE + 1,
      300_000,
      1_000_000,
    ];
    while (sizes.length < 50) sizes.push(crypto.randomInt(20, sizes.length % 5 === 0 ? 700_000 : 20_000));
    const items: { to: Address; tokenId: bigint; tokenUri: string | null; size: number }[] = [];
    for (const [i, size] of sizes.entries()) {
      const bytes = jsonDocument(i, size);
      assert.equal(bytes.length, size);
      // Ids in different words of the codec bitmap as well as neighbours.
      const tokenId = i % 3 === 0 ? (BigInt(i) << 100n) + 7n : BigInt(500 + i);
      items.push({ to: freshAddress(), tokenId, tokenUri: await docUri(bytes), size });
      if (i % 10 === 9) items.push({ to: freshAddress(), tokenId: BigInt(10_000 + i), tokenUri: null, size: 0 }); // dev tokens mixed in
    }
    const dagPb = items.filter((i) => i.tokenUri?.startsWith('ipfs://bafybei')).length;
    assert.equal(dagPb, items.filter((i) => i.size > CHUNK_SIZE).length);
    assert.ok(dagPb >= 6, `${dagPb} dag-pb documents`);
    for (let i = 0; i < items.length; i += 12) {
      const batch = items.slice(i, i + 12);
      const r = await sendData(c, mintBatchCalldata(batch), mintGasFor(batch));
      assert.ok(r.gasUsed <= mintGasFor(batch));
    }
    for (const item of items) {
      const expected = item.tokenUri ?? `${BASE}${item.tokenId}`;
      assert.equal(await read(c, Collection.abi, 'tokenURI', [item.tokenId]), expected, `document of ${item.size} bytes`);
    }
    t.diagnostic(`${items.length} tokens, ${dagPb} of them dag-pb`);
  });

  it('tokenURI base32 is right for edge digests (all zero bits but one, all ones, alternating)', async () => {
    const c = await deploy(Collection, ['Edges', 'E', BASE, false, forwarder, [], ...NO_OPTIONS]);
    const digests: Hex[] = [`0x${'ff'.repeat(32)}`, `0x${'55'.repeat(32)}`, `0x${'aa'.repeat(32)}`, `0x${'00'.repeat(31)}01`, `0x80${'00'.repeat(31)}`];
    for (let b = 0; b < 256; b += 5) digests.push(`0x${(1n << BigInt(b)).toString(16).padStart(64, '0')}`);
    const items = digests.flatMap((d, i) => [
      { to: freshAddress(), tokenId: BigInt(2 * i + 1), tokenUri: `ipfs://${CID.createV1(0x55, Digest.create(0x12, hexToBytes(d)))}` },
      { to: freshAddress(), tokenId: BigInt(2 * i + 2), tokenUri: `ipfs://${CID.createV1(0x70, Digest.create(0x12, hexToBytes(d)))}` },
    ]);
    await sendData(c, mintBatchCalldata(items));
    for (const item of items) assert.equal(await read(c, Collection.abi, 'tokenURI', [item.tokenId]), item.tokenUri);
  });

  it('replaying a batch containing an already-minted id reverts atomically', async () => {
    const batch = [
      [freshAddress(), freshAddress()],
      [10n, 2n],
      [zeroHash, zeroHash],
      [false, false],
    ];
    await expectRevert(collection, Collection.abi, 'mintBatch', batch, 'ERC721InvalidSender');
    // Also mine it (fixed gas skips estimation) to prove the on-chain revert is all-or-nothing.
    const hash = await wallet.writeContract({
      address: collection,
      abi: Collection.abi,
      functionName: 'mintBatch',
      args: batch,
      account: operator,
      chain: foundry,
      gas: 500_000n,
    });
    const receipt = await pub.waitForTransactionReceipt({ hash });
    assert.equal(receipt.status, 'reverted');
    await expectRevert(collection, Collection.abi, 'ownerOf', [10n], 'ERC721NonexistentToken');
    assert.equal(await read(collection, Collection.abi, 'ownerOf', [2n]), holders[1]);
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [2n]), doc2); // the replay changed nothing
    // Single mint follows the same rule.
    await expectRevert(collection, Collection.abi, 'mint', [holders[0], 1n, zeroHash, false], 'ERC721InvalidSender');
  });

  it('rejects mismatched arrays, dag-pb without a digest, and non-operators', async () => {
    const h = holders[0];
    await expectRevert(collection, Collection.abi, 'mintBatch', [[h], [20n, 21n], [zeroHash, zeroHash], [false, false]], 'LengthMismatch');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[h], [20n], [], [false]], 'LengthMismatch');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[h], [20n], [zeroHash], []], 'LengthMismatch');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[h], [20n], [zeroHash], [true]], 'InvalidCid');
    await expectRevert(collection, Collection.abi, 'mint', [h, 20n, zeroHash, true], 'InvalidCid');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[h], [20n], [zeroHash], [false]], 'NotOperator', h);
    await expectRevert(collection, Collection.abi, 'setBaseURI', ['x'], 'NotOperator', h);
  });

  it('rejects a batch whose address or bool words are not clean ABI values, as the decoder would', async () => {
    // mintBatch reads its arrays' words itself: an address with high bits set or a bool other than 0/1
    // must revert (nothing minted) exactly as Solidity's own element checks do.
    const h = holders[0];
    const clean = encodeFunctionData({ abi: Collection.abi, functionName: 'mintBatch', args: [[h], [30n], [zeroHash], [false]] });
    const word = (hex: string, index: number) => hex.slice(10 + 64 * index, 10 + 64 * (index + 1));
    const withWord = (index: number, value: string) => `${clean.slice(0, 10 + 64 * index)}${value}${clean.slice(10 + 64 * (index + 1))}` as Hex;
    // Head: 4 offsets; then each array as length + element: to[0] is word 5, dagPb[0] is word 11.
    assert.equal(word(clean, 5), h.slice(2).toLowerCase().padStart(64, '0'));
    assert.equal(word(clean, 11), '0'.repeat(64));
    const dirtyAddress = withWord(5, `01${h.slice(2).toLowerCase().padStart(62, '0')}`);
    const boolTwo = withWord(11, '2'.padStart(64, '0'));
    for (const data of [dirtyAddress, boolTwo]) {
      await assert.rejects(pub.call({ to: collection, data, account: operator.address }));
      const receipt = await pub.waitForTransactionReceipt({
        hash: await wallet.sendTransaction({ to: collection, data, account: operator, chain: foundry, gas: 300_000n }),
      });
      assert.equal(receipt.status, 'reverted');
    }
    await expectRevert(collection, Collection.abi, 'ownerOf', [30n], 'ERC721NonexistentToken');
    await sendData(collection, clean); // the same batch, clean, mints
    assert.equal(await read(collection, Collection.abi, 'ownerOf', [30n]), h);
  });

  it('setTokenCID / refreshMetadata: NotEditable on a fixed collection', async () => {
    const { digest, dagPb } = cidArg(doc100);
    await expectRevert(collection, Collection.abi, 'setTokenCID', [2n, digest, dagPb], 'NotEditable');
    await expectRevert(collection, Collection.abi, 'refreshMetadata', [2n], 'NotEditable');
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [2n]), doc2);
  });

  it('setTokenCID / refreshMetadata / setBaseURI emit ERC-4906 events on an editable collection', async (t: TestContext) => {
    await send(editableCollection, Collection.abi, 'mint', [holders[0], 7n, zeroHash, false]);
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), 'ipfs://base/7');

    const setCid = async (uri: string | null) => {
      const r = await sendData(editableCollection, setTokenCidCalldata(7n, uri), 100_000n);
      const logs = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'MetadataUpdate' });
      assert.equal(logs.length, 1);
      assert.deepEqual(logs[0]!.args, { _tokenId: 7n });
      return r;
    };
    // raw -> dag-pb -> raw -> another raw: the codec bit follows the CID.
    const rawDoc = await docUri(jsonDocument(7, 500));
    const gas: Record<string, bigint> = {};
    gas['none -> raw'] = (await setCid(rawDoc)).gasUsed;
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), rawDoc);
    gas['raw -> dag-pb'] = (await setCid(doc101Large)).gasUsed;
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), doc101Large);
    gas['dag-pb -> raw'] = (await setCid(doc100)).gasUsed;
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), doc100);
    gas['raw -> raw'] = (await setCid(rawDoc)).gasUsed;
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), rawDoc);
    for (const [k, g] of Object.entries(gas)) assert.ok(g <= 80_000n, `setTokenCID ${k}: ${g} gas`);
    t.diagnostic(
      `setTokenCID gas: ${Object.entries(gas)
        .map(([k, g]) => `${k} ${g}`)
        .join(', ')}`,
    );

    let r = await send(editableCollection, Collection.abi, 'refreshMetadata', [7n]);
    const logs = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'MetadataUpdate' });
    assert.deepEqual(logs[0]!.args, { _tokenId: 7n });

    const { digest } = cidArg(rawDoc);
    await expectRevert(editableCollection, Collection.abi, 'setTokenCID', [8n, digest, false], 'ERC721NonexistentToken');
    await expectRevert(editableCollection, Collection.abi, 'setTokenCID', [7n, zeroHash, true], 'InvalidCid');
    await expectRevert(editableCollection, Collection.abi, 'setTokenCID', [7n, digest, false], 'NotOperator', holders[0]);
    await expectRevert(editableCollection, Collection.abi, 'refreshMetadata', [8n], 'ERC721NonexistentToken');

    r = await send(editableCollection, Collection.abi, 'setBaseURI', ['ipfs://v2/']);
    const batch = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'BatchMetadataUpdate' });
    assert.deepEqual(batch[0]!.args, { _fromTokenId: 0n, _toTokenId: 2n ** 256n - 1n });
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), rawDoc); // a CID wins over the base
    // A zero digest falls back to the (new) base URI.
    await setCid(null);
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), 'ipfs://v2/7');
  });

  describe('gasless user actions through the forwarder', () => {
    const user = fresh(); // holds no ETH, ever
    const other = freshAddress();

    it('transferFrom signed by the owner, relayed by the operator', async () => {
      await sendData(collection, mintBatchCalldata([{ to: user.address, tokenId: 100n, tokenUri: doc100 }]));
      await sendData(collection, mintBatchCalldata([{ to: user.address, tokenId: 101n, tokenUri: doc101Large }]));
      const data = encodeFunctionData({
        abi: Collection.abi,
        functionName: 'transferFrom',
        args: [user.address, other, 100n],
      });
      const request = await forwardRequest(forwarder, user, collection, data);
      assert.equal(await read(forwarder, Forwarder.abi, 'verify', [request]), true);
      const r = await send(forwarder, Forwarder.abi, 'execute', [request]);
      const executed = parseEventLogs({ abi: Forwarder.abi, logs: r.logs, eventName: 'ExecutedForwardRequest' });
      assert.equal((executed[0]!.args as { success: boolean }).success, true);
      assert.equal(await read(collection, Collection.abi, 'ownerOf', [100n]), other);
      assert.equal(await read(collection, Collection.abi, 'tokenURI', [100n]), doc100);
      assert.equal(await read(forwarder, Forwarder.abi, 'nonces', [user.address]), 1n);
      assert.equal(await pub.getBalance({ address: user.address }), 0n);
    });

    it('a transfer signed by a non-owner is rejected', async () => {
      // Validly signed by `thief`, who neither owns nor is approved for token 101: inner call reverts.
      const thief = privateKeyToAccount(generatePrivateKey());
      const data = encodeFunctionData({
        abi: Collection.abi,
        functionName: 'transferFrom',
        args: [user.address, thief.address, 101n],
      });
      const request = await forwardRequest(forwarder, thief, collection, data);
      await expectRevert(forwarder, Forwarder.abi, 'execute', [request], 'FailedCall');
      // Claiming to be the owner with someone else's signature fails signature verification.
      const forged = await forwardRequest(forwarder, thief, collection, data, user.address);
      assert.equal(await read(forwarder, Forwarder.abi, 'verify', [forged]), false);
      await expectRevert(forwarder, Forwarder.abi, 'execute', [forged], 'ERC2771ForwarderInvalidSigner');
      // A direct call by the relayer (not the owner) is not authorized either.
      await expectRevert(collection, Collection.abi, 'transferFrom', [user.address, operator.address, 101n], 'ERC721InsufficientApproval');
      assert.equal(await read(collection, Collection.abi, 'ownerOf', [101n]), user.address);
    });

    it('burn signed by the owner, relayed by the operator, clears the CID; burned ids cannot be re-minted', async () => {
      // The CID's storage, located from its known value so the test does not hard-code the layout.
      assert.equal(await read(collection, Collection.abi, 'tokenURI', [101n]), doc101Large);
      const { digest } = cidArg(doc101Large);
      const cidSlot = await findMappingSlot(collection, 101n, digest);
      const bitSlot = await findMappingSlot(collection, 101n >> 8n, `0x${(1n << (101n & 0xffn)).toString(16).padStart(64, '0')}`);

      const data = encodeFunctionData({ abi: Collection.abi, functionName: 'burn', args: [101n] });
      const request = await forwardRequest(forwarder, user, collection, data);
      const r = await send(forwarder, Forwarder.abi, 'execute', [request]);
      const transfers = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'Transfer' });
      assert.deepEqual(transfers[0]!.args, { from: user.address, to: '0x0000000000000000000000000000000000000000', tokenId: 101n });
      await expectRevert(collection, Collection.abi, 'ownerOf', [101n], 'ERC721NonexistentToken');
      await expectRevert(collection, Collection.abi, 'tokenURI', [101n], 'ERC721NonexistentToken');
      assert.equal(await pub.getStorageAt({ address: collection, slot: cidSlot }), zeroHash, 'digest cleared');
      assert.equal(await pub.getStorageAt({ address: collection, slot: bitSlot }), zeroHash, 'dag-pb bit cleared');
      // Neither without nor with a CID, alone or in a batch.
      await expectRevert(collection, Collection.abi, 'mint', [user.address, 101n, zeroHash, false], 'TokenBurned');
      await expectRevert(collection, Collection.abi, 'mint', [user.address, 101n, digest, true], 'TokenBurned');
      await expectRevert(
        collection,
        Collection.abi,
        'mintBatch',
        [
          [other, user.address],
          [102n, 101n],
          [zeroHash, digest],
          [false, true],
        ],
        'TokenBurned',
      );
      // Burning someone else's token (the operator is not approved) fails.
      await expectRevert(collection, Collection.abi, 'burn', [100n], 'ERC721InsufficientApproval');
      assert.equal(await pub.getBalance({ address: user.address }), 0n);
    });
  });

  describe('collection options: soulbound (ERC-5192), royalties (ERC-2981), contract URI (ERC-7572)', () => {
    const holder = fresh(); // holds no ETH: acts through the forwarder
    const receiver = freshAddress();
    let sb: Address;

    it('a soulbound collection locks every token at mint, refuses transfers (direct and relayed), allows burns', async () => {
      sb = await deploy(Collection, ['Badges', 'BDG', BASE, false, forwarder, [], true, receiver, 250n, 'ipfs://contract-doc']);
      assert.equal(await read(sb, Collection.abi, 'supportsInterface', ['0xb45a3c0e']), true);
      assert.equal(await read(collection, Collection.abi, 'supportsInterface', ['0xb45a3c0e']), false);
      const r = await sendData(sb, mintBatchCalldata([1n, 2n].map((tokenId) => ({ to: holder.address, tokenId, tokenUri: null }))));
      const locks = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'Locked' });
      assert.deepEqual(
        locks.map((l) => (l.args as { tokenId: bigint }).tokenId),
        [1n, 2n],
      );
      assert.equal(await read(sb, Collection.abi, 'locked', [1n]), true);
      await expectRevert(sb, Collection.abi, 'locked', [99n], 'ERC721NonexistentToken');
      // Even the owner itself cannot move it, with either entry point.
      await expectRevert(sb, Collection.abi, 'transferFrom', [holder.address, receiver, 1n], 'Soulbound', holder.address);
      await expectRevert(sb, Collection.abi, 'safeTransferFrom', [holder.address, receiver, 1n], 'Soulbound', holder.address);
      const move = encodeFunctionData({ abi: Collection.abi, functionName: 'transferFrom', args: [holder.address, receiver, 1n] });
      await expectRevert(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, holder, sb, move)], 'FailedCall');
      assert.equal(await read(sb, Collection.abi, 'ownerOf', [1n]), holder.address);
      const burn = encodeFunctionData({ abi: Collection.abi, functionName: 'burn', args: [1n] });
      await send(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, holder, sb, burn)]);
      await expectRevert(sb, Collection.abi, 'ownerOf', [1n], 'ERC721NonexistentToken');
      // Not soulbound: locked(id) is false and transfers work (the relayed transfer test above).
      await sendData(collection, mintBatchCalldata([{ to: holder.address, tokenId: 500n, tokenUri: null }]));
      assert.equal(await read(collection, Collection.abi, 'locked', [500n]), false);
    });

    it('royaltyInfo answers the receiver and amount set; setCollectionInfo changes royalty and contract URI with ContractURIUpdated', async () => {
      assert.equal(await read(sb, Collection.abi, 'supportsInterface', ['0x2a55205a']), true); // ERC-2981
      assert.deepEqual(await read(sb, Collection.abi, 'royaltyInfo', [2n, 10_000n]), [receiver, 250n]);
      assert.equal(await read(sb, Collection.abi, 'contractURI'), 'ipfs://contract-doc');
      const other = freshAddress();
      const r = await send(sb, Collection.abi, 'setCollectionInfo', [other, 1000n, 'ipfs://contract-doc-2']);
      assert.equal(parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'ContractURIUpdated' }).length, 1);
      assert.deepEqual(await read(sb, Collection.abi, 'royaltyInfo', [2n, 10_000n]), [other, 1000n]);
      assert.equal(await read(sb, Collection.abi, 'contractURI'), 'ipfs://contract-doc-2');
      // A zero receiver removes the royalty.
      await send(sb, Collection.abi, 'setCollectionInfo', [zeroAddress, 0n, 'ipfs://contract-doc-3']);
      assert.deepEqual(await read(sb, Collection.abi, 'royaltyInfo', [2n, 10_000n]), [zeroAddress, 0n]);
      // Only operators.
      await expectRevert(sb, Collection.abi, 'setCollectionInfo', [other, 1n, 'x'], 'NotOperator', holder.address);
      // Without options: no royalty, an empty contract URI.
      assert.deepEqual(await read(collection, Collection.abi, 'royaltyInfo', [500n, 10_000n]), [zeroAddress, 0n]);
      assert.equal(await read(collection, Collection.abi, 'contractURI'), '');
    });
  });

  describe('gas', () => {
    let c: Address;
    let nextId = 1_000n;
    // Recipients that already hold a token of the collection, as a service's users do after their first
    // asset: their balance slot exists, so a mint rewrites it (~5k) instead of creating it (~22k).
    // `fresh` recipients (a wallet's first token) are the worst case, which the gas limits must cover.
    const regulars = Array.from({ length: 50 }, freshAddress);
    let turn = 0;
    const rawUris: string[] = [];
    const dagPbUris: string[] = [];

    before(async () => {
      // Deployed as the service deploys it: the relayer is an explicit operator.
      c = await deploy(Collection, ['Gas', 'GAS', BASE, false, forwarder, [operator.address], ...NO_OPTIONS]);
      await sendData(c, mintBatchCalldata(regulars.map((to, i) => ({ to, tokenId: (1n << 200n) + BigInt(i), tokenUri: null }))));
      // Calldata of a random digest costs what a document's does (both are ~all non-zero bytes).
      for (let i = 0; i < 400; i++) rawUris.push(`ipfs://${CID.createV1(0x55, Digest.create(0x12, crypto.randomBytes(32)))}`);
      for (let i = 0; i < 200; i++) dagPbUris.push(`ipfs://${CID.createV1(0x70, Digest.create(0x12, crypto.randomBytes(32)))}`);
      rawUris[0] = await docUri(jsonDocument(0, 700));
      dagPbUris[0] = await docUri(jsonDocument(0, CHUNK_SIZE + 100));
    });

    /** mintBatch of the items with the service's gas limit; returns gas per token. */
    async function mintMeasured(t: TestContext, label: string, uris: (string | null)[], opts: { fresh?: boolean; ids?: bigint[] } = {}): Promise<bigint> {
      const items = uris.map((tokenUri, i) => ({
        to: opts.fresh ? freshAddress() : regulars[turn++ % regulars.length]!,
        tokenId: opts.ids?.[i] ?? nextId++,
        tokenUri,
      }));
      const limit = mintGasFor(items);
      const r = await sendData(c, mintBatchCalldata(items), limit);
      const perToken = r.gasUsed / BigInt(items.length);
      t.diagnostic(`${label}: ${r.gasUsed} gas (${perToken}/token; limit ${limit})`);
      // The service's gas limit covers the cost, the worst cases included (mined with that limit, too).
      assert.ok(r.gasUsed <= limit, `${label}: used ${r.gasUsed} > limit ${limit}`);
      const last = items[items.length - 1]!;
      assert.equal(await read(c, Collection.abi, 'tokenURI', [last.tokenId]), last.tokenUri ?? `${BASE}${last.tokenId}`);
      return perToken;
    }

    async function mintSingle(t: TestContext, label: string, tokenUri: string, fresh: boolean): Promise<bigint> {
      const { digest, dagPb } = cidArg(tokenUri);
      const to = fresh ? freshAddress() : regulars[turn++ % regulars.length]!;
      const r = await sendData(c, encodeFunctionData({ abi: Collection.abi, functionName: 'mint', args: [to, nextId++, digest, dagPb] }));
      t.diagnostic(`${label}: ${r.gasUsed} gas`);
      return r.gasUsed;
    }

    it('production (raw CID): <= 100k for a single mint, <= 60k per token in a batch of 100', async (t: TestContext) => {
      for (const fresh of [false, true]) {
        const who = fresh ? 'new holder' : 'holder';
        const single = await mintMeasured(t, `mintBatch 1 raw, ${who}`, rawUris.slice(0, 1), { fresh });
        assert.ok(single <= 100_000n, `${single}`);
        assert.ok((await mintSingle(t, `mint raw, ${who}`, rawUris[1]!, fresh)) <= 100_000n);
      }
      await mintMeasured(t, 'mintBatch 10 raw, holders', rawUris.slice(2, 12));
      const batched = await mintMeasured(t, 'mintBatch 100 raw, holders', rawUris.slice(100, 200));
      assert.ok(batched <= 60_000n, `${batched}`);
      await mintMeasured(t, 'mintBatch 100 raw, new holders', rawUris.slice(200, 300), { fresh: true });
    });

    it('development (no CID): <= 35k per token in a batch of 100', async (t: TestContext) => {
      await mintMeasured(t, 'mintBatch 1 dev, holder', [null]);
      await mintMeasured(t, 'mintBatch 10 dev, holders', Array<null>(10).fill(null));
      const batched = await mintMeasured(t, 'mintBatch 100 dev, holders', Array<null>(100).fill(null));
      assert.ok(batched <= 35_000n, `${batched}`);
      await mintMeasured(t, 'mintBatch 100 dev, new holders', Array<null>(100).fill(null), { fresh: true });
    });

    it('dag-pb CIDs, and the worst case: new holders and sparse ids', async (t: TestContext) => {
      // The first dag-pb token of a 256-id word creates its bitmap word; the rest of the word is cheap.
      nextId = ((nextId >> 8n) + 1n) << 8n;
      const single = await mintMeasured(t, 'mintBatch 1 dag-pb (new bitmap word), holder', dagPbUris.slice(0, 1));
      assert.ok(single <= 125_000n, `${single}`);
      const batched = await mintMeasured(t, 'mintBatch 100 dag-pb, holders', dagPbUris.slice(1, 101));
      assert.ok(batched <= 60_000n, `${batched}`);
      // Every id in its own word of both bitmaps: one more cold slot each (and a new word for dag-pb).
      const sparse = (k: bigint) => Array.from({ length: 100 }, (_, i) => (BigInt(i + 1) << 128n) + k);
      await mintMeasured(t, 'mintBatch 100 dev, new holders, sparse ids', Array<null>(100).fill(null), { fresh: true, ids: sparse(0n) });
      await mintMeasured(t, 'mintBatch 100 raw, new holders, sparse ids', rawUris.slice(300, 400), { fresh: true, ids: sparse(1n) });
      await mintMeasured(t, 'mintBatch 100 dag-pb, new holders, sparse ids', dagPbUris.slice(100, 200), { fresh: true, ids: sparse(2n) });
    });
  });
});

/** Sends calldata as the operator (gas estimated unless given) and waits for success. */
async function sendData(to: Address, data: Hex, gas?: bigint): Promise<TransactionReceipt> {
  return mined(await wallet.sendTransaction({ to, data, account: operator, chain: foundry, gas }));
}

/** A metadata document of exactly `size` bytes of JSON (as the service stores them), random content. */
function jsonDocument(seed: number, size: number): Buffer {
  const doc = {
    name: `Asset #${seed}`,
    description: '',
    image: 'ipfs://bafkreih777777777777777777777777777777777777777777777777774',
    attributes: [{ trait_type: 'seed', value: seed }],
  };
  const empty = Buffer.byteLength(JSON.stringify(doc));
  if (size < empty) return Buffer.from(JSON.stringify({ n: crypto.randomBytes(Math.max(0, Math.floor((size - 8) / 2))).toString('hex') }).padEnd(size, ' '));
  doc.description = crypto
    .randomBytes(size)
    .toString('base64url')
    .slice(0, size - empty);
  const bytes = Buffer.from(JSON.stringify(doc));
  assert.equal(bytes.length, size);
  return bytes;
}

/** `ipfs://<cid>` as the service records a document's token URI. */
async function docUri(bytes: Uint8Array): Promise<string> {
  return `ipfs://${await cidOfBytes(bytes)}`;
}

/** The storage slot of `mapping[key]` holding `value`, trying the first declared slots (layout-agnostic). */
async function findMappingSlot(address: Address, key: bigint, value: Hex): Promise<Hex> {
  for (let p = 0n; p < 32n; p++) {
    const slot = keccak256(encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [key, p]));
    if ((await pub.getStorageAt({ address, slot })) === value) return slot;
  }
  throw new Error(`no mapping slot holds ${value} for key ${key}`);
}

describe('MintworksRewards', () => {
  const E = 10n ** 18n;
  const SUPPLY = 1000n * E;
  const AMOUNT = 1_501_000_000_000_000_000n; // 1.501e18
  let forwarder: Address;
  let rewards: Address;
  const receiver = freshAddress();
  const user = fresh(); // holds no ETH
  const ref = (s: string) => `0x${Buffer.from(s).toString('hex').padEnd(64, '0')}` as Hex;

  async function claimViaForwarder(to: Address, claimRef: Hex) {
    const data = encodeFunctionData({ abi: Rewards.abi, functionName: 'claim', args: [to, claimRef] });
    return forwardRequest(forwarder, user, rewards, data);
  }

  it('deploys with the whole supply held by the contract', async () => {
    forwarder = await deploy(Forwarder);
    rewards = await deploy(Rewards, ['Mint Points', 'MPT', SUPPLY, receiver, forwarder, []]);
    assert.equal(await read(rewards, Rewards.abi, 'decimals'), 18);
    assert.equal(await read(rewards, Rewards.abi, 'totalSupply'), SUPPLY);
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [rewards]), SUPPLY);
    assert.equal(await read(rewards, Rewards.abi, 'available'), SUPPLY);
    assert.equal(await read(rewards, Rewards.abi, 'withdrawReceiver'), receiver);
    assert.equal(await read(rewards, Rewards.abi, 'owner'), operator.address);
    assert.equal(await read(rewards, Rewards.abi, 'withdrawn'), false);
  });

  it('allocates once per ref and never beyond the available supply', async () => {
    const r = await send(rewards, Rewards.abi, 'allocate', [user.address, AMOUNT, ref('alloc-1')]);
    const logs = parseEventLogs({ abi: Rewards.abi, logs: r.logs, eventName: 'Allocated' });
    assert.deepEqual(logs[0]!.args, { user: user.address, amount: AMOUNT, ref: ref('alloc-1') });
    assert.equal(await read(rewards, Rewards.abi, 'allocated', [user.address]), AMOUNT);
    assert.equal(await read(rewards, Rewards.abi, 'totalAllocated'), AMOUNT);
    assert.equal(await read(rewards, Rewards.abi, 'available'), SUPPLY - AMOUNT);
    assert.equal(await read(rewards, Rewards.abi, 'usedRef', [ref('alloc-1')]), true);

    await expectRevert(rewards, Rewards.abi, 'allocate', [user.address, 1n, ref('alloc-1')], 'DuplicateRef');
    await expectRevert(rewards, Rewards.abi, 'allocate', [user.address, SUPPLY - AMOUNT + 1n, ref('alloc-2')], 'InsufficientSupply');
    await expectRevert(rewards, Rewards.abi, 'allocate', [user.address, 1n, ref('alloc-2')], 'NotOperator', user.address);
    // Batch: a duplicate ref inside the batch reverts the whole batch.
    await expectRevert(
      rewards,
      Rewards.abi,
      'allocateBatch',
      [
        [user.address, user.address],
        [1n, 1n],
        [ref('b-1'), ref('b-1')],
      ],
      'DuplicateRef',
    );
    await expectRevert(rewards, Rewards.abi, 'allocateBatch', [[user.address], [1n, 1n], [ref('b-1')]], 'LengthMismatch');
  });

  it('allocateBatch allocates every item', async () => {
    const other = freshAddress();
    await send(rewards, Rewards.abi, 'allocateBatch', [
      [other, other],
      [2n * E, 3n * E],
      [ref('b-1'), ref('b-2')],
    ]);
    assert.equal(await read(rewards, Rewards.abi, 'allocated', [other]), 5n * E);
    assert.equal(await read(rewards, Rewards.abi, 'totalAllocated'), AMOUNT + 5n * E);
  });

  it('user claims through the forwarder to a fresh address', async () => {
    const dest = freshAddress();
    const request = await claimViaForwarder(dest, ref('claim-1'));
    const r = await send(forwarder, Forwarder.abi, 'execute', [request]);
    const claimed = parseEventLogs({ abi: Rewards.abi, logs: r.logs, eventName: 'Claimed' });
    assert.deepEqual(claimed[0]!.args, { user: user.address, to: dest, amount: AMOUNT, ref: ref('claim-1') });
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [dest]), AMOUNT);
    assert.equal(await read(rewards, Rewards.abi, 'allocated', [user.address]), 0n);
    assert.equal(await read(rewards, Rewards.abi, 'totalAllocated'), 5n * E);
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [rewards]), SUPPLY - AMOUNT);

    // Second claim moves nothing but still emits Claimed with amount 0.
    const dest2 = freshAddress();
    const r2 = await send(forwarder, Forwarder.abi, 'execute', [await claimViaForwarder(dest2, ref('claim-2'))]);
    const claimed2 = parseEventLogs({ abi: Rewards.abi, logs: r2.logs, eventName: 'Claimed' });
    assert.deepEqual(claimed2[0]!.args, { user: user.address, to: dest2, amount: 0n, ref: ref('claim-2') });
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [dest2]), 0n);
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [dest]), AMOUNT);
    assert.equal(await pub.getBalance({ address: user.address }), 0n);
  });

  it('withdraw sends everything left to the receiver and closes the pool', async () => {
    await expectRevert(rewards, Rewards.abi, 'withdraw', [], 'NotOperator', user.address);
    const r = await send(rewards, Rewards.abi, 'withdraw', []);
    const logs = parseEventLogs({ abi: Rewards.abi, logs: r.logs, eventName: 'Withdrawn' });
    assert.deepEqual(logs[0]!.args, { receiver, amount: SUPPLY - AMOUNT });
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [receiver]), SUPPLY - AMOUNT);
    assert.equal(await read(rewards, Rewards.abi, 'balanceOf', [rewards]), 0n);
    assert.equal(await read(rewards, Rewards.abi, 'withdrawn'), true);
    assert.equal(await read(rewards, Rewards.abi, 'available'), 0n);
    assert.equal(await read(rewards, Rewards.abi, 'totalAllocated'), 0n);

    // Claims, allocations and a second withdraw are now rejected.
    await expectRevert(rewards, Rewards.abi, 'claim', [user.address, ref('c')], 'PoolWithdrawn', user.address);
    await expectRevert(forwarder, Forwarder.abi, 'execute', [await claimViaForwarder(user.address, ref('c'))], 'FailedCall');
    await expectRevert(rewards, Rewards.abi, 'allocate', [user.address, 0n, ref('late')], 'PoolWithdrawn');
    await expectRevert(rewards, Rewards.abi, 'withdraw', [], 'PoolWithdrawn');
  });

  it('rejects a zero withdraw receiver at deploy time', async () => {
    await assert.rejects(
      deploy(Rewards, ['X', 'X', 1n, '0x0000000000000000000000000000000000000000', forwarder, []]),
      // viem does not decode constructor reverts; match the raw ZeroAddress() selector.
      (err: unknown) => {
        assert.ok(err instanceof BaseError);
        assert.match(err.shortMessage, new RegExp(toFunctionSelector('ZeroAddress()')));
        return true;
      },
    );
  });
});

describe('MintworksItems (ERC-1155)', () => {
  const BASE = 'https://meta.example/items/';
  let forwarder: Address;
  let items: Address;
  const a = fresh(); // holds no ETH, ever
  const b = fresh();
  const outsider = freshAddress();
  let seq = 0n;
  let firstOfA = 0n; // the number of the 5 minted to a
  /** mintBatch calldata args for [to, id, amount, cap] rows, each with the next sequence number. */
  const mintArgs = (rows: [Address, bigint, bigint, bigint][], seqs?: bigint[]) => [
    rows.map((r) => r[0]),
    rows.map((r) => r[1]),
    rows.map((r) => r[2]),
    rows.map((r) => r[3]),
    seqs ?? rows.map(() => ++seq),
  ];
  const balance = (who: Address, id: bigint) => read<bigint>(items, Items.abi, 'balanceOf', [who, id]);

  it('deploys with its operators and the forwarder; answers ERC-1155 interfaces; uri is base + id', async () => {
    forwarder = await deploy(Forwarder);
    const op = fresh();
    items = await deploy(Items, [BASE, forwarder, [op.address]]);
    assert.equal(await read(items, Items.abi, 'isOperator', [op.address]), true);
    assert.equal(await read(items, Items.abi, 'isOperator', [operator.address]), true); // the owner
    assert.equal(await read(items, Items.abi, 'isOperator', [a.address]), false);
    assert.equal(await read(items, Items.abi, 'isTrustedForwarder', [forwarder]), true);
    assert.equal(await read(items, Items.abi, 'supportsInterface', ['0xd9b67a26']), true); // ERC-1155
    assert.equal(await read(items, Items.abi, 'supportsInterface', ['0x0e89341c']), true); // metadata URI
    assert.equal(await read(items, Items.abi, 'uri', [7n]), `${BASE}7`);
    await expectRevert(items, Items.abi, 'mintBatch', mintArgs([[a.address, 1n, 1n, 0n]]), 'NotOperator', a.address);
    await expectRevert(items, Items.abi, 'setOperator', [a.address, true], 'OwnableUnauthorizedAccount', op.address);
    await expectRevert(items, Items.abi, 'setBaseURI', ['x'], 'NotOperator', a.address);
  });

  it('mints amounts to many users in one transaction, one TransferSingle each', async () => {
    const r = await send(
      items,
      Items.abi,
      'mintBatch',
      mintArgs([
        [a.address, 1n, 5n, 1000n],
        [b.address, 1n, 3n, 1000n],
        [a.address, 2n, 10n ** 30n, 0n], // unlimited: any amount
      ]),
    );
    const logs = parseEventLogs({ abi: Items.abi, logs: r.logs, eventName: 'TransferSingle' });
    assert.equal(logs.length, 3);
    assert.deepEqual(logs[0]!.args, { operator: operator.address, from: '0x0000000000000000000000000000000000000000', to: a.address, id: 1n, value: 5n });
    assert.equal(await balance(a.address, 1n), 5n);
    assert.equal(await balance(b.address, 1n), 3n);
    assert.equal(await balance(a.address, 2n), 10n ** 30n);
    assert.equal(await read(items, Items.abi, 'mintedSupply', [1n]), 8n);
    assert.equal(await read(items, Items.abi, 'maxSupply', [1n]), 1000n);
    assert.equal(await read(items, Items.abi, 'maxSupply', [2n]), 0n);
    assert.deepEqual(await read(items, Items.abi, 'mintsUsed', [[seq - 2n, seq - 1n, seq, seq + 1n]]), [true, true, true, false]);
    firstOfA = seq - 2n;
  });

  it('refreshURI(id) emits URI with the current URI, for operators only', async () => {
    const r = await send(items, Items.abi, 'refreshURI', [1n]);
    const logs = parseEventLogs({ abi: Items.abi, logs: r.logs, eventName: 'URI' });
    assert.equal(logs.length, 1);
    assert.deepEqual(logs[0]!.args, { value: `${BASE}1`, id: 1n });
    await expectRevert(items, Items.abi, 'refreshURI', [1n], 'NotOperator', a.address);
  });

  it('setTokenCID points uri(id) at an IPFS document (raw or dag-pb), emits URI, and a zero digest falls back', async (t: TestContext) => {
    const rawDoc = Buffer.from('{"name":"Potion"}');
    const rawUri = `ipfs://${(await cidOfBytes(rawDoc)).toString()}`;
    const bigUri = `ipfs://${(await cidOfBytes(crypto.randomBytes(CHUNK_SIZE + 1))).toString()}`;
    assert.match(rawUri, /^ipfs:\/\/bafkrei/);
    assert.match(bigUri, /^ipfs:\/\/bafybei/);
    const set = async (id: bigint, uri: string | null) => {
      const { digest, dagPb } = cidArg(uri);
      const r = await send(items, Items.abi, 'setTokenCID', [id, digest, dagPb]);
      const logs = parseEventLogs({ abi: Items.abi, logs: r.logs, eventName: 'URI' });
      assert.equal(logs.length, 1);
      assert.deepEqual(logs[0]!.args, { value: uri ?? `${BASE}${id}`, id });
      return r.gasUsed;
    };
    t.diagnostic(`setTokenCID raw, fresh slot: ${await set(1n, rawUri)} gas`);
    assert.equal(await read(items, Items.abi, 'uri', [1n]), rawUri);
    assert.equal(await read(items, Items.abi, 'uri', [2n]), `${BASE}2`, 'other ids keep base + id');
    t.diagnostic(`setTokenCID dag-pb, fresh bitmap word: ${await set(1n, bigUri)} gas`);
    assert.equal(await read(items, Items.abi, 'uri', [1n]), bigUri);
    await set(1n, rawUri); // back to raw: the codec bit is cleared
    assert.equal(await read(items, Items.abi, 'uri', [1n]), rawUri);
    await set(1n, null);
    assert.equal(await read(items, Items.abi, 'uri', [1n]), `${BASE}1`);
    await expectRevert(items, Items.abi, 'setTokenCID', [3n, zeroHash, true], 'InvalidCid');
    await expectRevert(items, Items.abi, 'setTokenCID', [3n, cidArg(rawUri).digest, false], 'NotOperator', a.address);
  });

  it('a replayed batch mints only the numbers not used yet; the first mint fixes the cap', async () => {
    const before = await balance(a.address, 1n);
    // The number of the first 5 (used above) beside a new one: only the new one mints.
    const fresh1 = ++seq;
    await send(
      items,
      Items.abi,
      'mintBatch',
      mintArgs(
        [
          [a.address, 1n, 5n, 1000n],
          [a.address, 1n, 2n, 5n],
        ],
        [firstOfA, fresh1],
      ),
    );
    assert.equal(await balance(a.address, 1n), before + 2n, 'the used number was skipped; a later cap is ignored');
    assert.equal(await read(items, Items.abi, 'maxSupply', [1n]), 1000n);
    assert.equal(await read(items, Items.abi, 'mintUsed', [fresh1]), true);
  });

  it('refuses a mint past the max supply, the whole batch with it', async () => {
    const minted = await read<bigint>(items, Items.abi, 'mintedSupply', [1n]);
    const left = 1000n - minted;
    const s1 = seq + 1n;
    await expectRevert(
      items,
      Items.abi,
      'mintBatch',
      mintArgs(
        [
          [b.address, 3n, 1n, 0n],
          [b.address, 1n, left + 1n, 1000n],
        ],
        [s1, s1 + 1n],
      ),
      'MaxSupplyExceeded',
    );
    await expectRevert(items, Items.abi, 'mintBatch', mintArgs([[b.address, 1n, 2n ** 200n, 1000n]], [s1]), 'MaxSupplyExceeded');
    assert.equal(await read(items, Items.abi, 'mintUsed', [s1]), false, 'nothing of the reverted batch stays');
    await send(items, Items.abi, 'mintBatch', mintArgs([[b.address, 1n, left, 1000n]]));
    assert.equal(await read(items, Items.abi, 'mintedSupply', [1n]), 1000n);
    await expectRevert(items, Items.abi, 'mintBatch', mintArgs([[b.address, 1n, 1n, 1000n]], [seq + 1n]), 'MaxSupplyExceeded');
    await expectRevert(items, Items.abi, 'mintBatch', [[a.address], [1n], [1n], [], []], 'LengthMismatch');
  });

  it('transfers and burns amounts signed by the holder through the forwarder; others cannot', async () => {
    const a1 = await balance(a.address, 1n);
    const b1 = await balance(b.address, 1n);
    const transfer = encodeFunctionData({ abi: Items.abi, functionName: 'safeTransferFrom', args: [a.address, b.address, 1n, 2n, '0x'] });
    await send(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, a, items, transfer)]);
    assert.equal(await balance(a.address, 1n), a1 - 2n);
    assert.equal(await balance(b.address, 1n), b1 + 2n);
    const burn = encodeFunctionData({ abi: Items.abi, functionName: 'burn', args: [b.address, 1n, 1n] });
    const r = await send(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, b, items, burn)]);
    const [burned] = parseEventLogs({ abi: Items.abi, logs: r.logs, eventName: 'TransferSingle' });
    assert.equal((burned!.args as { to: Address }).to, '0x0000000000000000000000000000000000000000');
    assert.equal(await balance(b.address, 1n), b1 + 1n);
    assert.equal(await read(items, Items.abi, 'mintedSupply', [1n]), 1000n, 'a burn makes no room under the cap');
    // b signs a transfer of a's items: the inner call reverts; the relayer cannot move them either.
    const theft = encodeFunctionData({ abi: Items.abi, functionName: 'safeTransferFrom', args: [a.address, outsider, 1n, 1n, '0x'] });
    await expectRevert(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, b, items, theft)], 'FailedCall');
    await expectRevert(items, Items.abi, 'burn', [a.address, 1n, 1n], 'ERC1155MissingApprovalForAll');
    // More than held: refused.
    const tooMuch = encodeFunctionData({ abi: Items.abi, functionName: 'burn', args: [a.address, 1n, a1] });
    await expectRevert(forwarder, Forwarder.abi, 'execute', [await forwardRequest(forwarder, a, items, tooMuch)], 'FailedCall');
    assert.equal(await pub.getBalance({ address: a.address }), 0n);
  });

  it('gas per minted item, beside the ERC-721 (diagnostics; the bench records it)', async (t: TestContext) => {
    const c = await deploy(Items, [BASE, forwarder, [operator.address]]);
    const holders = Array.from({ length: 10 }, freshAddress);
    // First mint of each holder and id pays for fresh slots; the measured batches are the regular case.
    await send(c, Items.abi, 'mintBatch', mintArgs(holders.map((h) => [h, 1n, 1n, 0n])));
    const measure = async (label: string, rows: [Address, bigint, bigint, bigint][]) => {
      const r = await send(c, Items.abi, 'mintBatch', mintArgs(rows));
      const per = r.gasUsed / BigInt(rows.length);
      t.diagnostic(`${label}: ${r.gasUsed} gas (${per}/item)`);
      return per;
    };
    await measure('mintBatch 1, holder', [[holders[0]!, 1n, 3n, 0n]]);
    const batched = await measure(
      'mintBatch 100, holders',
      Array.from({ length: 100 }, (_, i) => [holders[i % 10]!, 1n, 2n, 0n] as [Address, bigint, bigint, bigint]),
    );
    assert.ok(batched <= 35_000n, `${batched}`);
    await measure(
      'mintBatch 100, new holders',
      Array.from({ length: 100 }, () => [freshAddress(), 1n, 2n, 0n] as [Address, bigint, bigint, bigint]),
    );
  });
});
