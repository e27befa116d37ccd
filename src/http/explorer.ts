// A minimal explorer (JSON, or a page for a browser) so that `explorer_url` links work on chains
// without one: the embedded chain (and CHAIN_RPC_URL without EXPLORER_URL) under /explorer, a CHAINS
// entry without an explorer under /explorer/<chain id>. Point EXPLORER_URL or the entry's `explorer`
// at a real explorer for a public chain.
import type { FastifyInstance } from 'fastify';
import { isAddress, isHash, parseAbi, type Address, type Hex, type PublicClient } from 'viem';
import type { Ctx } from '../services/context.js';
import { errorBody } from '../util/errors.js';
import { defaultChain } from '../config/config.js';
import { escapeHtml, page, sendHtml, wantsHtml } from './kit/html-page.js';

const erc721 = parseAbi(['function ownerOf(uint256) view returns (address)', 'function tokenURI(uint256) view returns (string)']);

export async function explorerRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx): Promise<void> {
  const home = defaultChain(ctx);
  if (ctx.sender) chainExplorer(app, '/explorer', ctx.sender.client, { id: ctx.sender.chainId, name: home.name, base: home.explorer });
  for (const [id, c] of ctx.chains ?? []) {
    const base = `${ctx.installation.publicUrl}/explorer/${id}`;
    if (c.sender && c.chain.explorer === base) chainExplorer(app, `/explorer/${id}`, c.sender.client, { id, name: c.chain.name, base });
  }
}

// Long: one table of the explorer's pages, a short entry each.
function chainExplorer(
  app: FastifyInstance<any, any, any, any, any>,
  prefix: string,
  client: PublicClient,
  chain: { id: number; name: string; base: string },
): void {
  const bad = (reply: any, what: string) => reply.code(404).send(errorBody('not_found', `${what} not found.`));
  const explorer = chain.base;
  /** JSON for scripts; for a browser the same fields as a page, links between explorer pages kept. */
  const answer = (req: any, reply: any, title: string, data: Record<string, unknown>, link: Record<string, string> = {}) => {
    if (!wantsHtml(req.headers.accept)) return data;
    const rows = Object.entries(data).map(([k, v]): [string, string | null, string | undefined] => [
      k,
      v === null || v === undefined ? null : String(v),
      link[k],
    ]);
    return sendHtml(
      reply,
      page(title, rows, `Chain ${chain.id} (${escapeHtml(chain.name)}). The same data as JSON: request it without <code>Accept: text/html</code>.`),
    );
  };
  app.get<{ Params: { address: string } }>(`${prefix}/address/:address`, { schema: { hide: true } }, async (req, reply) => {
    const address = req.params.address;
    if (!isAddress(address)) return bad(reply, 'Address');
    const [balance, nonce, code] = await Promise.all([client.getBalance({ address }), client.getTransactionCount({ address }), client.getCode({ address })]);
    return answer(req, reply, `Address ${address}`, {
      address,
      chain_id: chain.id,
      balance_wei: balance.toString(),
      nonce,
      is_contract: !!code && code !== '0x',
    });
  });
  app.get<{ Params: { contract: string }; Querystring: { a?: string } }>(`${prefix}/token/:contract`, { schema: { hide: true } }, async (req, reply) => {
    const contract = req.params.contract as Address;
    const id = req.query.a;
    if (!isAddress(contract) || !id || !/^\d+$/.test(id)) return bad(reply, 'Token');
    const [owner, tokenUri] = await Promise.all([
      client.readContract({ address: contract, abi: erc721, functionName: 'ownerOf', args: [BigInt(id)] }).catch(() => null),
      client.readContract({ address: contract, abi: erc721, functionName: 'tokenURI', args: [BigInt(id)] }).catch(() => null),
    ]);
    if (!owner) return bad(reply, 'Token');
    const uri: Record<string, string> = tokenUri && /^https?:\/\//.test(tokenUri) ? { token_uri: tokenUri } : {};
    return answer(
      req,
      reply,
      `Token ${id}`,
      { contract, token_id: id, owner, token_uri: tokenUri, chain_id: chain.id },
      { contract: `${explorer}/address/${contract}`, owner: `${explorer}/address/${owner}`, ...uri },
    );
  });
  app.get<{ Params: { hash: string } }>(`${prefix}/tx/:hash`, { schema: { hide: true } }, async (req, reply) => {
    if (!isHash(req.params.hash)) return bad(reply, 'Transaction');
    const r = await client.getTransactionReceipt({ hash: req.params.hash as Hex }).catch(() => null);
    if (!r) return bad(reply, 'Transaction');
    const to = r.to ?? r.contractAddress;
    return answer(
      req,
      reply,
      'Transaction',
      {
        hash: r.transactionHash,
        status: r.status,
        block_number: Number(r.blockNumber),
        from: r.from,
        to: r.to,
        gas_used: r.gasUsed.toString(),
        logs: r.logs.length,
      },
      { from: `${explorer}/address/${r.from}`, ...(to ? { to: `${explorer}/address/${to}` } : {}) },
    );
  });
}
