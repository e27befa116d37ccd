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

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const wantsHtml = (accept: string | undefined) => /\btext\/html\b/i.test(accept ?? '');

/** A small self-contained page (no script, no external resource) for a browser. */
function page(title: string, rows: [label: string, text: string | null, href?: string][], note = ''): string {
  const cell = (v: string | null, href?: string) => (v === null ? '<em>none</em>' : href ? `<a href="${escape(href)}"><code>${escape(v)}</code></a>` : `<code>${escape(v)}</code>`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escape(title === 'Mintworks' ? title : `${title} · Mintworks`)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:56rem;padding:0 1rem;color:#1b1b1f}th{text-align:left;padding-right:1.5rem;vertical-align:top;color:#555;font-weight:500}td,th{padding-bottom:.4rem}code{word-break:break-all}p{color:#555}</style></head>
<body><h1>${escape(title)}</h1><table>${rows.map(([k, v, href]) => `<tr><th>${escape(k)}</th><td>${cell(v, href)}</td></tr>`).join('')}</table>${note ? `<p>${note}</p>` : ''}</body></html>`;
}

export async function miscRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, health: () => Promise<Health>): Promise<void> {
  // The front door: where the documentation and the console are (JSON for scripts, a page for browsers).
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    const base = ctx.config.publicUrl;
    const links = { name: 'Mintworks', api: `${base}/v1`, docs: `${base}/docs`, openapi: `${base}/openapi.json`, console: `${base}/console`, health: `${base}/health` };
    if (!wantsHtml(req.headers.accept)) return links;
    const rows: [string, string, string][] = [
      ['API reference', links.docs, links.docs],
      ['Developer console', links.console, links.console],
      ['OpenAPI document', links.openapi, links.openapi],
      ['Health', links.health, links.health],
      ['API base URL', links.api, links.api],
    ];
    return reply.type('text/html; charset=utf-8').send(page('Mintworks', rows, 'A self-hosted asset-minting service. The API answers under <code>/v1</code> (App key and token) and <code>/admin/v1</code> (operator token).'));
  });

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

  // A minimal explorer (JSON, or a page for a browser) so that `explorer_url` links work on chains
  // without one: the embedded chain (and CHAIN_RPC_URL without EXPLORER_URL) under /explorer, a CHAINS
  // entry without an explorer under /explorer/<chain id>. Point EXPLORER_URL or the entry's `explorer`
  // at a real explorer for a public chain.
  if (ctx.sender) explorerRoutes(app, '/explorer', ctx.sender.client, { id: ctx.sender.chainId, name: ctx.config.chainName, base: ctx.config.explorerUrl });
  for (const [id, c] of ctx.chains ?? []) {
    const base = `${ctx.config.publicUrl}/explorer/${id}`;
    if (c.sender && c.config.explorerUrl === base) explorerRoutes(app, `/explorer/${id}`, c.sender.client, { id, name: c.config.chainName, base });
  }
}

function explorerRoutes(app: FastifyInstance<any, any, any, any, any>, prefix: string, client: PublicClient, chain: { id: number; name: string; base: string }): void {
  const bad = (reply: any, what: string) => reply.code(404).send(errorBody(404, 'not_found', `${what} not found.`));
  const explorer = chain.base;
  /** JSON for scripts; for a browser the same fields as a page, links between explorer pages kept. */
  const answer = (req: any, reply: any, title: string, data: Record<string, unknown>, link: Record<string, string> = {}) => {
    if (!wantsHtml(req.headers.accept)) return data;
    const rows = Object.entries(data).map(([k, v]): [string, string | null, string | undefined] => [k, v === null || v === undefined ? null : String(v), link[k]]);
    return reply.type('text/html; charset=utf-8').send(page(title, rows, `Chain ${chain.id} (${escape(chain.name)}). The same data as JSON: request it without <code>Accept: text/html</code>.`));
  };
  app.get<{ Params: { address: string } }>(`${prefix}/address/:address`, { schema: { hide: true } }, async (req, reply) => {
    const address = req.params.address;
    if (!isAddress(address)) return bad(reply, 'Address');
    const [balance, nonce, code] = await Promise.all([client.getBalance({ address }), client.getTransactionCount({ address }), client.getCode({ address })]);
    return answer(req, reply, `Address ${address}`, { address, chain_id: chain.id, balance_wei: balance.toString(), nonce, is_contract: !!code && code !== '0x' });
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
    return answer(req, reply, `Token ${id}`, { contract, token_id: id, owner, token_uri: tokenUri, chain_id: chain.id }, { contract: `${explorer}/address/${contract}`, owner: `${explorer}/address/${owner}`, ...uri });
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
      { hash: r.transactionHash, status: r.status, block_number: Number(r.blockNumber), from: r.from, to: r.to, gas_used: r.gasUsed.toString(), logs: r.logs.length },
      { from: `${explorer}/address/${r.from}`, ...(to ? { to: `${explorer}/address/${to}` } : {}) },
    );
  });
}
