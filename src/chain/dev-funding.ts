// Funds an account on a development node: anvil has anvil_setBalance, Hardhat's node hardhat_setBalance
// (and no anvil_ methods). The first that the node knows is used, and remembered per node.

type Call = (method: string, params: unknown[]) => Promise<unknown>;

const DEV_SET_BALANCE = ['anvil_setBalance', 'hardhat_setBalance'] as const;
const known = new WeakMap<Call, string>();

/** Sets `address`'s balance to `wei` on a development node (anvil or Hardhat). */
export async function setDevBalance(call: Call, address: string, wei: bigint): Promise<void> {
  const params = [address, `0x${wei.toString(16)}`];
  const remembered = known.get(call);
  if (remembered) return void (await call(remembered, params));
  let last: unknown;
  for (const method of DEV_SET_BALANCE) {
    try {
      await call(method, params);
      known.set(call, method);
      return;
    } catch (err) {
      last = err;
      // Only "no such method" moves on to the next node's name; anything else is the answer.
      if (!/method not found|does not exist|not supported|unsupported|-32601/i.test(errorText(err))) throw err;
    }
  }
  throw last;
}

function errorText(err: unknown): string {
  const e = err as { code?: number; details?: string; shortMessage?: string; message?: string };
  return `${e.code ?? ''} ${e.details ?? ''} ${e.shortMessage ?? ''} ${e.message ?? ''}`;
}
