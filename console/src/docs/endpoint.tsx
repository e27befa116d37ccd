// One endpoint of the reference: what it does, what it takes, what it answers, and a curl line to try it.
import { CopyButton } from '../ui';
import { type Document, type Endpoint, resolve, type Schema, successData } from './openapi';
import { Block, Fields, ParameterFields, Prose } from './schema';

/** A value of the schema's type for the example request (its own example when it has one). */
function sample(doc: Document, s: Schema | undefined, depth = 0): unknown {
  const r = resolve(doc, s);
  if (!r || depth > 3) return null;
  if (r.example !== undefined) return r.example;
  if (r.enum?.length) return r.enum[0];
  const alt = r.anyOf ?? r.oneOf;
  if (alt?.length) return sample(doc, alt.find((a) => a.type === 'string') ?? alt[0], depth + 1);
  if (r.type === 'object' || r.properties) {
    const out: Record<string, unknown> = {};
    for (const name of r.required ?? []) out[name] = sample(doc, r.properties?.[name], depth + 1);
    return out;
  }
  if (r.type === 'array') return [];
  if (r.type === 'integer' || r.type === 'number') return 1;
  if (r.type === 'boolean') return true;
  return 'string';
}

function curl(doc: Document, e: Endpoint): string {
  const management = e.path.startsWith('/admin/');
  const base = doc.servers?.[0]?.url ?? '';
  const query = (e.op.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=…`);
  const url = `${base}${e.path}${query.length ? `?${query.join('&')}` : ''}`;
  const lines = [`curl -X ${e.method.toUpperCase()} "${url}"`];
  if (management) lines.push('  -H "Authorization: Bearer $OPERATOR_TOKEN"');
  else lines.push('  -H "X-API-KEY: $MW_API_KEY"', '  -H "Authorization: Bearer $MW_TOKEN"');
  const body = e.op.requestBody?.content?.['application/json']?.schema;
  if (body) lines.push('  -H "Content-Type: application/json"', `  -d '${JSON.stringify(sample(doc, body), null, 2).replace(/\n/g, '\n  ')}'`);
  return lines.join(' \\\n');
}

export function EndpointSection({ doc, e }: { doc: Document; e: Endpoint }) {
  const params = e.op.parameters ?? [];
  const body = e.op.requestBody?.content?.['application/json']?.schema;
  const success = successData(doc, e.op);
  const failures = Object.entries(e.op.responses ?? {}).filter(([status]) => !status.startsWith('2'));
  const example = curl(doc, e);
  return (
    <section class="ref-endpoint" id={e.id} aria-labelledby={`${e.id}-title`}>
      <div class="ref-main">
        <h3 id={`${e.id}-title`}>{e.op.summary ?? `${e.method.toUpperCase()} ${e.path}`}</h3>
        <p class="ref-route">
          <span class={`method ${e.method}`}>{e.method.toUpperCase()}</span> <code>{e.path}</code>
        </p>
        {e.op.description && (
          <p>
            <Prose text={e.op.description} />
          </p>
        )}
        {['path', 'query', 'header'].map((where) => {
          const list = params.filter((p) => p.in === where);
          return list.length ? (
            <Block key={where} title={`${where.charAt(0).toUpperCase()}${where.slice(1)} parameters`}>
              <ParameterFields doc={doc} params={list} />
            </Block>
          ) : null;
        })}
        {body && (
          <Block title="Request body">
            <Fields doc={doc} schema={body} />
          </Block>
        )}
        {success && (
          <Block title={`Answer ${success.status}: data`}>
            <Fields doc={doc} schema={success.schema} empty={success.schema ? 'See its schema below.' : 'No data.'} />
          </Block>
        )}
        {failures.length > 0 && (
          <Block title="Errors">
            <ul class="ref-errors">
              {failures.map(([status, r]) => {
                const code = (r.content?.['application/json']?.example as { error?: { detail?: { code?: string } } } | undefined)?.error?.detail?.code;
                return (
                  <li key={status}>
                    <span class="status-code">{status}</span> {code && <code>{code}</code>} <span class="muted">{r.description}</span>
                  </li>
                );
              })}
            </ul>
          </Block>
        )}
      </div>
      <aside class="ref-aside" aria-label="Example request">
        <div class="ref-code">
          <div class="ref-code-head">
            <span>Example request</span>
            <CopyButton value={example} label={`the example request of ${e.op.summary ?? e.path}`} icon />
          </div>
          <pre>{example}</pre>
        </div>
      </aside>
    </section>
  );
}
