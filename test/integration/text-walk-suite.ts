// Every route's text goes through the kit's validators: each route the server registered (the public
// API, the management API, the console's API), authenticated as its callers are, is sent NUL and a lone
// surrogate in each of its path and query parameters, and answers 400 — never a 500 from a database
// that cannot store the text (PostgreSQL refuses NUL in text; neither stores a lone surrogate as given).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ZodObject, ZodType } from 'zod';
import { startTestService, type TestService } from '../helpers/service.js';
import { routesOf } from '../../src/http/app.js';

/** NUL, and a lone surrogate: as a JSON-escaped query string would carry it (UTF-8 of U+D800 is not valid UTF-8). */
const BAD = { nul: '%00', surrogate: '%ED%A0%80', nulInText: 'a%00b' };

function keysOf(schema: unknown): string[] {
  const shape = (schema as ZodObject | undefined)?.shape as Record<string, ZodType> | undefined;
  return shape ? Object.keys(shape) : [];
}

export function textWalkSuite(db: 'sqlite' | 'postgres'): void {
  describe(`every route refuses NUL and lone surrogates in its parameters (${db})`, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(db);
    });
    after(async () => {
      await t?.stop();
    });

    it('answers 400, never 500, for each parameter of each route', { timeout: 600_000 }, async () => {
      const app = await t.newApp();
      const operator = t.svc.ctx.installation.operatorToken!;
      const sample = (name: string) => (/chain_id/.test(name) ? '31337' : /^(id|tx)$/.test(name) ? '1' : '123456789012');
      const routes = (routesOf.get(t.svc.http!) ?? []).filter((r) => /^\/(v1|admin\/v1|console\/api)\//.test(r.url));
      assert.ok(routes.length > 60, `routes listed: ${routes.length}`);
      const wrong: string[] = [];
      let sent = 0;
      for (const r of routes) {
        const methods = (Array.isArray(r.method) ? r.method : [r.method]).filter((m) => m !== 'HEAD');
        const params = keysOf(r.schema?.params);
        const query = keysOf(r.schema?.querystring);
        const auth: Record<string, string> = r.url.startsWith('/v1/')
          ? { 'x-api-key': app.apiKey, authorization: `Bearer ${app.api.token}` }
          : { authorization: `Bearer ${operator}` };
        const targets = [...params.map((p) => ({ kind: 'param' as const, name: p })), ...query.map((q) => ({ kind: 'query' as const, name: q }))];
        for (const method of methods) {
          for (const target of targets) {
            for (const [what, bad] of Object.entries(BAD)) {
              let path = r.url.replace(/:([a-z_]+)/g, (_m, name: string) => (target.kind === 'param' && name === target.name ? bad : sample(name)));
              if (target.kind === 'query') path += `?${target.name}=${bad}`;
              const res = await fetch(`${t.svc.url}${path}`, {
                method,
                headers: { ...auth, ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }) },
                body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
              });
              const body = await res.text();
              sent++;
              if (res.status !== 400) wrong.push(`${method} ${r.url} ${target.kind} ${target.name} (${what}): ${res.status} ${body.slice(0, 160)}`);
            }
          }
        }
      }
      assert.ok(sent > 100, `requests sent: ${sent}`);
      assert.deepEqual(wrong, [], `${wrong.length} of ${sent} answers were not 400`);
    });
  });
}
