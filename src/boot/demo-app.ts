// First start with an empty DATA_DIR: a "Demo" development App with an editable collection, so a new
// user can mint with curl within a minute. Its credentials go to DATA_DIR/demo.env (0600) and nowhere
// else: the banner says where they are and how to use them, and never prints a secret or a token
// (stderr is often collected with the logs).
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../services/context.js';
import { createApp } from '../services/apps/registry.js';
import { createCollection } from '../services/collections/collections.js';
import { signAppToken } from '../services/apps/tokens.js';

export interface DemoOptions {
  /** The service's base URL as bound (PUBLIC_URL, or the port actually bound). */
  url: string;
  /** The chain's JSON-RPC URL: the embedded chain's, or CHAIN_RPC_URL. */
  rpcUrl: string;
  print: boolean;
}

export async function ensureDemoApp(ctx: Ctx, opts: DemoOptions): Promise<void> {
  const any = await ctx.db.selectFrom('apps').select('uid').limit(1).executeTakeFirst();
  if (any) return;
  const app = await createApp(ctx, 'Demo', 'development');
  const collection = await createCollection(ctx, app.uid, { name: 'Demo Collection', symbol: 'DEMO', editable: true, description: 'Created on first start' });
  const token = await signAppToken(app.api_key, app.api_secret);
  const base = `${opts.url}/v1`;
  const env = [
    `# Mintworks demo App, created on first start. Keep this file private.`,
    `MW_URL=${base}`,
    `MW_RPC_URL=${opts.rpcUrl}`,
    `MW_APP=${app.uid}`,
    `MW_API_KEY=${app.api_key}`,
    `MW_API_SECRET=${app.api_secret}`,
    `MW_TOKEN=${token}`,
    `MW_COLLECTION=${collection.uid}`,
    '',
  ].join('\n');
  // A demo.env already there is another installation's (its database had this Demo App, not ours):
  // it is kept, and this one's is written beside it under its App's uid.
  let file = path.join(ctx.config.dataDir, 'demo.env');
  if (fs.existsSync(file)) {
    const other = file;
    file = path.join(ctx.config.dataDir, `demo-${app.uid}.env`);
    ctx.log.warn(
      { kept: other, written: file },
      "DATA_DIR/demo.env belongs to another installation that used this DATA_DIR: kept; this installation's Demo App is in its own file (give each installation a DATA_DIR of its own)",
    );
  }
  fs.writeFileSync(file, env, { mode: 0o600, flag: 'wx' });
  if (!opts.print) return;
  process.stderr.write(`
================================================================================
 Demo App created (development), with an editable collection (deploying now).
 Its API key, secret and a bearer token are in ${file} (private: 0600).
 Try it from another terminal:
   source ${file}
   curl -s -X POST "$MW_URL/user" -H "X-API-KEY: $MW_API_KEY" -H "Authorization: Bearer $MW_TOKEN" \\
     -H "Content-Type: application/json" -d '{"email":"player@example.com"}'
================================================================================
`);
}
