// Routes outside the API: health, token metadata documents, a minimal explorer for the embedded chain.
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../services/context.js';
import { tokenMetadata } from '../services/assets.js';
import { errorBody } from '../util/errors.js';
import { isUid } from '../util/ids.js';
import { isAddress, isHash, parseAbi, type Address, type Hex, type PublicClient } from 'viem';

const erc721 = parseAbi(['function ownerOf(uint256) view returns (address)', 'function tokenURI(uint256) view returns (string)']);

export interface Health {
  ready: boolean;
  [k: string]: unknown;
}

export async function miscRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, health: () => Promise<Health>): Promise<void> {
  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    const h = await health();
    return reply.code(h.ready ? 200 : 503).send(h);
  });

  // tokenURI of development Apps' collections: baseURI (= PUBLIC_URL/metadata/<collection>/) + token id.
  app.get<{ Params: { collection: string; token: string } }>('/metadata/:collection/:token', { schema: { hide: true } }, async (req, reply) => {
    const { collection, token } = req.params;
    const id = Number(token);
    const doc = isUid(collection) && Number.isSafeInteger(id) && id > 0 ? await tokenMetadata(ctx, collection, id) : null;
    if (!doc) return reply.code(404).send(errorBody(404, 'not_found', 'Token not found.'));
    // Editable: a short cache so an edit shows up within a minute.
    return reply.header('cache-control', 'public, max-age=60').type('application/json').send(doc);
  });

  // A minimal explorer (JSON) so that `explorer_url` links work on chains without one: the embedded
  // chain (and CHAIN_RPC_URL without EXPLORER_URL) under /explorer, a CHAINS entry without an explorer
  // under /explorer/<chain id>. Point EXPLORER_URL or the entry's `explorer` at a real explorer for a
  // public chain.
  if (ctx.sender) explorerRoutes(app, '/explorer', ctx.sender.client, ctx.sender.chainId);
  for (const [id, c] of ctx.chains ?? []) {
    if (c.sender && c.config.explorerUrl === `${ctx.config.publicUrl}/explorer/${id}`) explorerRoutes(app, `/explorer/${id}`, c.sender.client, id);
  }
}

function explorerRoutes(app: FastifyInstance<any, any, any, any, any>, prefix: string, client: PublicClient, chainId: number): void {
  const bad = (reply: any, what: string) => reply.code(404).send(errorBody(404, 'not_found', `${what} not found.`));
  app.get<{ Params: { address: string } }>(`${prefix}/address/:address`, { schema: { hide: true } }, async (req, reply) => {
    const address = req.params.address;
    if (!isAddress(address)) return bad(reply, 'Address');
    const [balance, nonce, code] = await Promise.all([client.getBalance({ address }), client.getTransactionCount({ address }), client.getCode({ address })]);
    return { address, chain_id: chainId, balance_wei: balance.toString(), nonce, is_contract: !!code && code !== '0x' };
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
    return { contract, token_id: id, owner, token_uri: tokenUri, chain_id: chainId };
  });
  app.get<{ Params: { hash: string } }>(`${prefix}/tx/:hash`, { schema: { hide: true } }, async (req, reply) => {
    if (!isHash(req.params.hash)) return bad(reply, 'Transaction');
    const r = await client.getTransactionReceipt({ hash: req.params.hash as Hex }).catch(() => null);
    if (!r) return bad(reply, 'Transaction');
    return { hash: r.transactionHash, status: r.status, block_number: Number(r.blockNumber), from: r.from, to: r.to, gas_used: r.gasUsed.toString(), logs: r.logs.length };
  });
}
