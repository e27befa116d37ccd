// The chain a shared suite (lifecycle, rewards) runs on: the embedded anvil (mining on arrival), or an
// external development node started for the suite (Hardhat's node with interval mining), so the same
// tests show that nothing depends on one node's quirks. Development-node methods differ by node:
// balances and storage are set with anvil_* or hardhat_* methods.
import { startExternalNode, type ExternalNode } from './external-node.js';
import { startOnExternalChain, startTestService, type TestService } from './service.js';

export interface SuiteChain {
  /** For test names: `embedded anvil`, `hardhat node`. */
  name: string;
  chainId: number;
  start(db: 'sqlite' | 'postgres'): Promise<TestService>;
  rpcUrl(t: TestService): string;
  /** Gives an account native currency (a development node's set-balance method). */
  fund(t: TestService, address: string, wei: bigint): Promise<void>;
  /** Writes a storage slot behind the service's back. */
  setStorageAt(t: TestService, address: string, slot: string, value: string): Promise<void>;
  /** Holds back block production (off), then mines what waited and goes on as before (on). */
  setMining(t: TestService, on: boolean): Promise<void>;
}

async function call(url: string, method: string, params: unknown[]): Promise<unknown> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const j = (await r.json()) as { result?: unknown; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

export const embeddedChain: SuiteChain = {
  name: 'embedded anvil',
  chainId: 31337,
  start: (db) => startTestService(db),
  rpcUrl: (t) => t.svc.chain!.rpcUrl,
  fund: async (t, address, wei) => void (await call(t.svc.chain!.rpcUrl, 'anvil_setBalance', [address, `0x${wei.toString(16)}`])),
  setStorageAt: async (t, address, slot, value) => void (await call(t.svc.chain!.rpcUrl, 'anvil_setStorageAt', [address, slot, value])),
  async setMining(t, on) {
    const url = t.svc.chain!.rpcUrl;
    await call(url, 'evm_setIntervalMining', [0]); // the embedded chain mines no interval blocks
    await call(url, 'evm_setAutomine', [on]);
    if (on) await call(url, 'evm_mine', []); // what waited in the mempool
  },
};

/** Hardhat's node (npm hardhat@2) mining a block every `blockTimeS` seconds, never on arrival. */
export function hardhatChain(blockTimeS = 2): SuiteChain {
  let node: ExternalNode | null = null;
  const url = () => node!.url;
  return {
    name: 'hardhat node',
    chainId: 31337,
    async start(db) {
      node = await startExternalNode({ kind: 'hardhat', chainId: 31337, blockTimeS });
      const n = node;
      try {
        const t = await startOnExternalChain(db, { id: 31337, name: 'Hardhat', rpc: n.url }, n.fund);
        return {
          ...t,
          stop: async () => {
            await t.stop();
            await n.stop();
          },
        };
      } catch (err) {
        await n.stop();
        throw err;
      }
    },
    rpcUrl: () => url(),
    fund: (_t, address, wei) => node!.fund(address, wei),
    setStorageAt: async (_t, address, slot, value) => void (await call(url(), 'hardhat_setStorageAt', [address, slot, value])),
    async setMining(_t, on) {
      if (!on) {
        await call(url(), 'evm_setIntervalMining', [0]);
        await call(url(), 'evm_setAutomine', [false]);
        return;
      }
      await call(url(), 'evm_mine', []); // what waited in the mempool
      await call(url(), 'evm_setIntervalMining', [blockTimeS * 1000]); // Hardhat counts in ms
    },
  };
}
