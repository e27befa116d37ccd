// First start with an empty DATA_DIR: a "Demo" development App with an editable collection, so a new
// user can mint with curl within a minute. Its credentials are printed once and kept in DATA_DIR/demo.env.
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from './services/context.js';
import { createApp } from './services/apps.js';
import { createCollection } from './services/collections.js';
import { signAppToken } from './services/tokens.js';

export async function ensureDemoApp(ctx: Ctx): Promise<void> {
  const any = await ctx.db.selectFrom('apps').select('uid').limit(1).executeTakeFirst();
  if (any) return;
  const app = await createApp(ctx, 'Demo', 'development');
  const collection = await createCollection(ctx, app.uid, { name: 'Demo Collection', symbol: 'DEMO', editable: true, description: 'Created on first start' });
  const token = await signAppToken(app.api_key, app.api_secret);
  const base = `${ctx.config.publicUrl}/v1`;
  const env = [
    `# Mintworks demo App, created on first start. Keep this file private.`,
    `MW_URL=${base}`,
    `MW_APP=${app.uid}`,
    `MW_API_KEY=${app.api_key}`,
    `MW_API_SECRET=${app.api_secret}`,
    `MW_TOKEN=${token}`,
    `MW_COLLECTION=${collection.uid}`,
    '',
  ].join('\n');
  const file = path.join(ctx.config.dataDir, 'demo.env');
  fs.writeFileSync(file, env, { mode: 0o600 });
  const banner = `
================================================================================
 Demo App created (development).  Credentials also saved in ${file}
   App uid        ${app.uid}
   API key        ${app.api_key}
   API secret     ${app.api_secret}
   Collection     ${collection.uid}  (editable, deploying now)
 Try it:
   curl -s -X POST ${base}/user \\
     -H "X-API-KEY: ${app.api_key}" \\
     -H "Authorization: Bearer ${token}" \\
     -H "Content-Type: application/json" -d '{"email":"player@example.com"}'
================================================================================
`;
  process.stderr.write(banner);
}
