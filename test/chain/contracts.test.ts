// Integration test of the Solidity contracts against a private anvil node.
// Run: node --import tsx --test test/chain/contracts.test.ts
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  parseEther,
  parseEventLogs,
  toFunctionSelector,
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

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ANVIL = join(root, 'node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil');
// anvil's default, pre-funded accounts derive from this mnemonic.
const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

type Artifact = { contractName: string; abi: Abi; bytecode: Hex };
const load = (name: string): Artifact =>
  JSON.parse(readFileSync(join(root, 'build/contracts', `${name}.json`), 'utf8')) as Artifact;

let anvil: ChildProcess | undefined;
let pub: PublicClient;
let wallet: WalletClient;
const operator = mnemonicToAccount(ANVIL_MNEMONIC); // index 0, funded
let Collection: Artifact, Forwarder: Artifact, Rewards: Artifact;

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
async function expectRevert(
  address: Address,
  abi: Abi,
  functionName: string,
  args: unknown[],
  errorName: string,
  from: Address = operator.address,
) {
  await assert.rejects(pub.simulateContract({ address, abi, functionName, args, account: from }), (err: unknown) => {
    assert.ok(err instanceof BaseError, String(err));
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    assert.ok(reverted, `expected revert ${errorName}, got: ${err.shortMessage}`);
    assert.equal(reverted.data?.errorName, errorName, err.shortMessage);
    return true;
  });
}

/** Builds and signs an ERC-2771 ForwardRequest (EIP-712) as `signer` for `from`. */
async function forwardRequest(
  forwarder: Address,
  signer: PrivateKeyAccount,
  to: Address,
  data: Hex,
  from: Address = signer.address,
) {
  const nonce = await read<bigint>(forwarder, Forwarder.abi, 'nonces', [from]);
  const { timestamp } = await pub.getBlock();
  const message = { from, to, value: 0n, gas: 300_000n, nonce, deadline: Number(timestamp) + 3600, data };
  const signature = await signer.signTypedData({
    domain: { name: 'MintworksForwarder', version: '1', chainId: foundry.id, verifyingContract: forwarder },
    types: {
      ForwardRequest: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'gas', type: 'uint256' },
        { name: 'nonce', type: 'uint256' },
        { name: 'deadline', type: 'uint48' },
        { name: 'data', type: 'bytes' },
      ],
    },
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

  it('deploys the forwarder and collections', async () => {
    forwarder = await deploy(Forwarder);
    collection = await deploy(Collection, ['Mint One', 'M1', BASE, false, forwarder, []]);
    editableCollection = await deploy(Collection, ['Mint Two', 'M2', 'ipfs://base/', true, forwarder, []]);
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
  });

  it('constructor operators get operator rights; only the owner manages them', async () => {
    const op = fresh();
    const c = await deploy(Collection, ['X', 'X', '', false, forwarder, [op.address]]);
    assert.equal(await read(c, Collection.abi, 'isOperator', [op.address]), true);
    await expectRevert(c, Collection.abi, 'mint', [op.address, 1n, ''], 'NotOperator', holders[0]);
    await expectRevert(c, Collection.abi, 'setOperator', [op.address, false], 'OwnableUnauthorizedAccount', op.address);
    await send(c, Collection.abi, 'setOperator', [op.address, false]);
    assert.equal(await read(c, Collection.abi, 'isOperator', [op.address]), false);
  });

  it('mintBatch mints each id to its recipient', async () => {
    await send(collection, Collection.abi, 'mintBatch', [holders, [1n, 2n, 3n], ['', 'ar://doc-2', '']]);
    for (const [i, h] of holders.entries()) {
      assert.equal(await read(collection, Collection.abi, 'ownerOf', [BigInt(i + 1)]), h);
    }
  });

  it('tokenURI is baseURI + id, or the per-token uri; reverts for unknown ids', async () => {
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [1n]), `${BASE}1`);
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [2n]), 'ar://doc-2');
    assert.equal(await read(collection, Collection.abi, 'tokenURI', [3n]), `${BASE}3`);
    await expectRevert(collection, Collection.abi, 'tokenURI', [99n], 'ERC721NonexistentToken');
  });

  it('replaying a batch containing an already-minted id reverts atomically', async () => {
    const batch = [[freshAddress(), freshAddress()], [10n, 2n], ['', '']];
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
    // Single mint follows the same rule.
    await expectRevert(collection, Collection.abi, 'mint', [holders[0], 1n, ''], 'ERC721InvalidSender');
  });

  it('rejects mismatched arrays and non-operators', async () => {
    await expectRevert(collection, Collection.abi, 'mintBatch', [[holders[0]], [20n, 21n], ['', '']], 'LengthMismatch');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[holders[0]], [20n], []], 'LengthMismatch');
    await expectRevert(collection, Collection.abi, 'mintBatch', [[holders[0]], [20n], ['']], 'NotOperator', holders[0]);
    await expectRevert(collection, Collection.abi, 'setBaseURI', ['x'], 'NotOperator', holders[0]);
  });

  it('setTokenURI / refreshMetadata: NotEditable on a fixed collection', async () => {
    await expectRevert(collection, Collection.abi, 'setTokenURI', [1n, 'ar://new'], 'NotEditable');
    await expectRevert(collection, Collection.abi, 'refreshMetadata', [1n], 'NotEditable');
  });

  it('setTokenURI / refreshMetadata / setBaseURI emit ERC-4906 events on an editable collection', async () => {
    await send(editableCollection, Collection.abi, 'mint', [holders[0], 7n, '']);
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), 'ipfs://base/7');

    let r = await send(editableCollection, Collection.abi, 'setTokenURI', [7n, 'ipfs://doc-7']);
    let logs = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'MetadataUpdate' });
    assert.equal(logs.length, 1);
    assert.deepEqual(logs[0]!.args, { _tokenId: 7n });
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), 'ipfs://doc-7');

    r = await send(editableCollection, Collection.abi, 'refreshMetadata', [7n]);
    logs = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'MetadataUpdate' });
    assert.deepEqual(logs[0]!.args, { _tokenId: 7n });

    await expectRevert(editableCollection, Collection.abi, 'setTokenURI', [8n, 'x'], 'ERC721NonexistentToken');
    await expectRevert(editableCollection, Collection.abi, 'refreshMetadata', [8n], 'ERC721NonexistentToken');

    r = await send(editableCollection, Collection.abi, 'setBaseURI', ['ipfs://v2/']);
    const batch = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'BatchMetadataUpdate' });
    assert.deepEqual(batch[0]!.args, { _fromTokenId: 0n, _toTokenId: 2n ** 256n - 1n });
    // Empty per-token uri falls back to the (new) base URI.
    await send(editableCollection, Collection.abi, 'setTokenURI', [7n, '']);
    assert.equal(await read(editableCollection, Collection.abi, 'tokenURI', [7n]), 'ipfs://v2/7');
  });

  describe('gasless user actions through the forwarder', () => {
    const user = fresh(); // holds no ETH, ever
    const other = freshAddress();

    it('transferFrom signed by the owner, relayed by the operator', async () => {
      await send(collection, Collection.abi, 'mint', [user.address, 100n, 'ar://doc-100']);
      await send(collection, Collection.abi, 'mint', [user.address, 101n, 'ar://doc-101']);
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
      await expectRevert(
        collection,
        Collection.abi,
        'transferFrom',
        [user.address, operator.address, 101n],
        'ERC721InsufficientApproval',
      );
      assert.equal(await read(collection, Collection.abi, 'ownerOf', [101n]), user.address);
    });

    it('burn signed by the owner, relayed by the operator; burned ids cannot be re-minted', async () => {
      const data = encodeFunctionData({ abi: Collection.abi, functionName: 'burn', args: [101n] });
      const request = await forwardRequest(forwarder, user, collection, data);
      const r = await send(forwarder, Forwarder.abi, 'execute', [request]);
      const transfers = parseEventLogs({ abi: Collection.abi, logs: r.logs, eventName: 'Transfer' });
      assert.deepEqual(transfers[0]!.args, { from: user.address, to: '0x0000000000000000000000000000000000000000', tokenId: 101n });
      await expectRevert(collection, Collection.abi, 'ownerOf', [101n], 'ERC721NonexistentToken');
      await expectRevert(collection, Collection.abi, 'tokenURI', [101n], 'ERC721NonexistentToken');
      await expectRevert(collection, Collection.abi, 'mint', [user.address, 101n, ''], 'TokenBurned');
      // Burning someone else's token (the operator is not approved) fails.
      await expectRevert(collection, Collection.abi, 'burn', [100n], 'ERC721InsufficientApproval');
      assert.equal(await pub.getBalance({ address: user.address }), 0n);
    });
  });

  it('gas: mintBatch of 1, 10 and 100 tokens (no uri)', async (t: TestContext) => {
    const c = await deploy(Collection, ['Gas', 'GAS', BASE, false, forwarder, []]);
    let nextId = 1_000n;
    for (const n of [1, 10, 100]) {
      const to = Array.from({ length: n }, freshAddress);
      const ids = Array.from({ length: n }, () => nextId++);
      const r = await send(c, Collection.abi, 'mintBatch', [to, ids, Array<string>(n).fill('')]);
      t.diagnostic(`mintBatch ${n} (distinct new holders, sequential ids): ${r.gasUsed} gas (${r.gasUsed / BigInt(n)}/token)`);
      assert.equal(await read(c, Collection.abi, 'ownerOf', [ids[n - 1]]), to[n - 1]);
    }
    // Worst case for the burned-id bitmap: every id in a different 256-id word.
    const to = Array.from({ length: 100 }, freshAddress);
    const ids = Array.from({ length: 100 }, (_, i) => BigInt(i + 1) << 128n);
    const r = await send(c, Collection.abi, 'mintBatch', [to, ids, Array<string>(100).fill('')]);
    t.diagnostic(`mintBatch 100 (distinct new holders, sparse ids): ${r.gasUsed} gas (${r.gasUsed / 100n}/token)`);
  });
});

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
    await expectRevert(
      rewards,
      Rewards.abi,
      'allocate',
      [user.address, SUPPLY - AMOUNT + 1n, ref('alloc-2')],
      'InsufficientSupply',
    );
    await expectRevert(rewards, Rewards.abi, 'allocate', [user.address, 1n, ref('alloc-2')], 'NotOperator', user.address);
    // Batch: a duplicate ref inside the batch reverts the whole batch.
    await expectRevert(
      rewards,
      Rewards.abi,
      'allocateBatch',
      [[user.address, user.address], [1n, 1n], [ref('b-1'), ref('b-1')]],
      'DuplicateRef',
    );
    await expectRevert(rewards, Rewards.abi, 'allocateBatch', [[user.address], [1n, 1n], [ref('b-1')]], 'LengthMismatch');
  });

  it('allocateBatch allocates every item', async () => {
    const other = freshAddress();
    await send(rewards, Rewards.abi, 'allocateBatch', [[other, other], [2n * E, 3n * E], [ref('b-1'), ref('b-2')]]);
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
