// The chains of a deployment as configured (CHAINS, EMBEDDED_CHAIN, CHAIN_RPC_URL), job kinds per
// chain, and the readiness rule shared by /health and the workers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '../../src/config/config.js';
import { parseKnownChains } from '../../src/config/chains.js';
import { chainKind } from '../../src/jobs/kinds.js';
import { judgeChain } from '../../src/domain/chain-funding.js';
import { KNOWN_CHAINS_TEXT } from '../../src/config/known-chains.js';
// @ts-expect-error: a plain JavaScript script, without types
import { installedViemChains, knownChainsOf } from '../../scripts/known-chains.mjs';

const base = { DATA_DIR: '/tmp/mw-chains-test', PORT: '8080' };
const amoy = { id: 80002, name: 'Amoy', rpc: 'http://127.0.0.1:9545' };

describe('chains configuration', () => {
  it('the embedded chain alone by default, named by CHAIN_ID / CHAIN_NAME', () => {
    const c = loadConfig({ ...base, CHAIN_ID: '1337', CHAIN_NAME: 'Dev' });
    assert.deepEqual(
      c.chains.map((x) => [x.id, x.name, x.embedded, x.explorer]),
      [[1337, 'Dev', true, 'http://127.0.0.1:8080/explorer']],
    );
    assert.equal(c.chains[0].id, 1337);
  });

  it('CHAINS adds chains after the embedded one; a well-known id takes its explorer and currency from viem', () => {
    const c = loadConfig({
      ...base,
      CHAINS: JSON.stringify([
        amoy,
        { id: 137, rpc: 'https://polygon.example/rpc/', confirmations: 5 },
        { id: 999999, name: 'Local', rpc: 'http://127.0.0.1:1' },
      ]),
    });
    assert.deepEqual(
      c.chains.map((x) => [x.id, x.name, x.embedded]),
      [
        [31337, 'Anvil', true],
        [80002, 'Amoy', false],
        [137, 'Polygon', false],
        [999999, 'Local', false],
      ],
    );
    assert.equal(c.chains[1].explorer, 'https://amoy.polygonscan.com');
    assert.equal(c.chains[2].rpc, 'https://polygon.example/rpc');
    assert.equal(c.chains[2].confirmations, 5);
    assert.equal(c.chains[2].currency, 'POL');
    assert.equal(c.chains[3].explorer, 'http://127.0.0.1:8080/explorer/999999', 'served by the minimal explorer');
    assert.equal(c.chains[0].id, 31337, 'the default chain is the embedded one');
  });

  it("the table of well-known chains is viem's list as installed (else: node scripts/known-chains.mjs)", () => {
    const fromViem = knownChainsOf(installedViemChains()) as unknown[];
    assert.ok(fromViem.length > 500, `viem lists ${fromViem.length} chains`);
    assert.deepEqual(parseKnownChains(KNOWN_CHAINS_TEXT), fromViem, 'src/config/known-chains.ts is not what viem lists: run node scripts/known-chains.mjs');
  });

  it('a named entry with an explorer still takes its currency from the table', () => {
    const c = loadConfig({
      ...base,
      EMBEDDED_CHAIN: 'false',
      CHAINS: JSON.stringify([{ id: 56, name: 'BSC', rpc: 'http://127.0.0.1:1', explorer: 'https://x.example' }]),
    });
    assert.deepEqual([c.chains[0].name, c.chains[0].explorer, c.chains[0].currency], ['BSC', 'https://x.example', 'BNB']);
  });

  it('EMBEDDED_CHAIN=false: the first of CHAINS is the default; CHAIN_RPC_URL is one external chain', () => {
    assert.equal(loadConfig({ ...base, EMBEDDED_CHAIN: 'false', CHAINS: JSON.stringify([amoy]) }).chains[0].id, 80002);
    const c = loadConfig({ ...base, CHAIN_RPC_URL: 'http://127.0.0.1:8546', CHAIN_ID: '80002', CHAIN_NAME: 'Amoy' });
    assert.deepEqual(
      c.chains.map((x) => [x.id, x.name, x.embedded, x.rpc]),
      [[80002, 'Amoy', false, 'http://127.0.0.1:8546']],
    );
  });

  it('a bad entry stops the start naming CHAINS[i].field', () => {
    const bad =
      (chains: unknown, env: Record<string, string> = {}) =>
      () =>
        loadConfig({ ...base, ...env, CHAINS: typeof chains === 'string' ? chains : JSON.stringify(chains) });
    assert.throws(bad('[{'), (e: Error) => e instanceof ConfigError && /CHAINS: not valid JSON/.test(e.message));
    assert.throws(bad({ id: 1 }), /CHAINS: must be a JSON array/);
    assert.throws(bad([amoy, { ...amoy, id: 5, rpc: 'ftp://x' }]), /CHAINS\[1\]\.rpc:/);
    assert.throws(bad([{ ...amoy, id: -3 }]), /CHAINS\[0\]\.id:/);
    assert.throws(bad([{ ...amoy, confirmations: 1000 }]), /CHAINS\[0\]\.confirmations:/);
    assert.throws(bad([{ ...amoy, colour: 'red' }]), /CHAINS\[0\]: unknown field\(s\) colour/);
    assert.throws(bad([{ id: 999999, rpc: 'http://127.0.0.1:1' }]), /CHAINS\[0\]\.name: required \(chain 999999 is not a well-known chain\)/);
    assert.throws(bad([amoy, amoy]), /CHAINS\[1\]\.id: chain 80002 is already served/);
    assert.throws(bad([{ ...amoy, id: 31337 }]), /CHAINS\[0\]\.id: chain 31337 is already served \(by the embedded chain, CHAIN_ID\)/);
    assert.throws(() => loadConfig({ ...base, EMBEDDED_CHAIN: 'false' }), /no chain to serve/);
    assert.throws(
      () => loadConfig({ ...base, EMBEDDED_CHAIN: 'true', CHAIN_RPC_URL: 'http://127.0.0.1:1' }),
      /EMBEDDED_CHAIN: CHAIN_RPC_URL replaces the embedded chain/,
    );
  });
});

describe('chain job kinds', () => {
  it('the home chain keeps plain kinds; other chains carry their id', () => {
    assert.equal(chainKind('asset.mint', 31337, 31337), 'asset.mint');
    assert.equal(chainKind('asset.mint', 80002, 31337), 'asset.mint@80002');
  });
});

describe('chain readiness', () => {
  const acct = (role: 'deployer' | 'relayer', balance: bigint | null, address = `0x${role}`) => ({ address, role, balance });
  it('ready: reachable, forwarder deployed, every relayer can pay', () => {
    const v = judgeChain({
      reachable: true,
      forwarderDeployed: true,
      accounts: [acct('deployer', 0n), acct('relayer', 10n ** 18n, '0xr1'), acct('relayer', 10n ** 15n, '0xr2')],
    });
    assert.equal(v.ready, true);
    assert.deepEqual(
      v.accounts.map((a) => a.low),
      [true, false, true],
      'low below 0.01, reported but not blocking',
    );
  });
  it('names what to fund, deployer first', () => {
    assert.match(
      judgeChain({ reachable: true, forwarderDeployed: false, accounts: [acct('deployer', 0n, '0xd'), acct('relayer', 0n)] }).reason!,
      /fund the deployer 0xd/,
    );
    assert.equal(
      judgeChain({ reachable: true, forwarderDeployed: false, accounts: [acct('deployer', 1n), acct('relayer', 0n)] }).reason,
      'deploying the forwarder',
    );
    const v = judgeChain({
      reachable: true,
      forwarderDeployed: true,
      accounts: [acct('deployer', 0n), acct('relayer', 0n, '0xr1'), acct('relayer', 0n, '0xr2')],
    });
    assert.deepEqual([v.ready, v.reason], [false, 'fund the relayers 0xr1, 0xr2']);
    assert.deepEqual(judgeChain({ reachable: false, forwarderDeployed: true, accounts: [] }), { ready: false, reason: 'chain unreachable', accounts: [] });
  });
});
