// Mintworks against an external chain (CHAIN_RPC_URL): here a separate anvil the service did not start
// and does not fund. Unfunded accounts are reported clearly instead of failing silently.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createPublicClient, http } from 'viem';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { loadConfig } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import { freePort, tempDir } from '../helpers/env.js';

describe('external chain (CHAIN_RPC_URL)', () => {
  let chain: EmbeddedChain;
  let svc: Service | null = null;
  const dataDir = tempDir();
  before(async () => {
    chain = await startEmbeddedChain({ dataDir: tempDir(), port: await freePort(), chainId: 31337, logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await svc?.stop();
    await chain?.stop();
  });
  const config = async () => loadConfig({ PORT: String(await freePort()), DATA_DIR: dataDir, CHAIN_RPC_URL: chain.rpcUrl, LOG_LEVEL: 'silent', DEMO_APP: 'false' });

  it('refuses to start while the deployer has no gas, naming the account to fund', async () => {
    await assert.rejects(startService(await config()), /deployer account 0x[0-9a-fA-F]{40} has no funds on chain 31337/);
  });

  it('with a funded deployer it starts, and /health reports the unfunded relayers', async () => {
    const message = await startService(await config()).then(() => '', (e: Error) => e.message);
    const deployer = /0x[0-9a-fA-F]{40}/.exec(message)?.[0];
    assert.ok(deployer, message);
    const rpc = createPublicClient({ transport: http(chain.rpcUrl) });
    await rpc.request({ method: 'anvil_setBalance' as any, params: [deployer, '0xde0b6b3a7640000'] as any });
    svc = await startService(await config());
    const h = await (await fetch(`${svc.url}/health`)).json();
    assert.equal(h.ready, true);
    assert.equal(h.chain.embedded, false);
    assert.equal(h.status, 'relayer balance low');
    assert.ok(h.relayers.length >= 1 && h.relayers.every((r: any) => r.low === true && r.balance_wei === '0'));
  });
});
