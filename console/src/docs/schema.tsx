// A schema's fields as a reader scans them (Stripe's style): name, type, required, what it means and
// what it must be; objects written inline open below their field, named ones link to their section.
import type { ComponentChildren } from 'preact';
import { constraints, type Document, refName, resolve, type Schema, typeName } from './openapi';

/** Text with `code` spans (the document's descriptions are written that way). */
export function Prose({ text }: { text: string | undefined }) {
  if (!text) return null;
  return (
    <>
      {text
        .split(/(`[^`]+`)/)
        .map((part, i) => (part.startsWith('`') && part.endsWith('`') && part.length > 1 ? <code key={i}>{part.slice(1, -1)}</code> : part))}
    </>
  );
}

function TypeLabel({ schema }: { schema: Schema | undefined }) {
  const named = schema?.$ref ?? schema?.items?.$ref;
  const text = typeName(schema);
  if (!named) return <span class="ref-type">{text}</span>;
  const name = refName(named);
  const [before, after] = text.split(name);
  return (
    <span class="ref-type">
      {before}
      <a href={`#schema-${name}`}>{name}</a>
      {after}
    </span>
  );
}

/** The object an inline schema holds (its own properties, or its array items'), when it has any. */
function inlineObject(doc: Document, s: Schema | undefined): Schema | undefined {
  if (!s || s.$ref) return undefined;
  if (s.properties) return s;
  if (s.type === 'array' && s.items && !s.items.$ref && s.items.properties) return s.items;
  const alt = (s.anyOf ?? s.oneOf)?.find((a) => !a.$ref && a.properties);
  return alt ? resolve(doc, alt) : undefined;
}

export function Fields({ doc, schema, empty = 'No fields.' }: { doc: Document; schema: Schema | undefined; empty?: string }) {
  const s = resolve(doc, schema);
  const props = Object.entries(s?.properties ?? {});
  if (props.length === 0) return <p class="muted">{empty}</p>;
  const required = new Set(s?.required ?? []);
  return (
    <ul class="ref-fields">
      {props.map(([name, p]) => (
        <Field key={name} doc={doc} name={name} schema={p} required={required.has(name)} />
      ))}
    </ul>
  );
}

function Field({ doc, name, schema, required }: { doc: Document; name: string; schema: Schema; required: boolean }) {
  const nested = inlineObject(doc, schema);
  const rules = constraints(schema);
  return (
    <li class="ref-field">
      <div class="ref-field-head">
        <code class="ref-name">{name}</code>
        <TypeLabel schema={schema} />
        {required && <span class="ref-required">required</span>}
      </div>
      {schema.description && (
        <p class="ref-desc">
          <Prose text={schema.description} />
        </p>
      )}
      {rules.length > 0 && <p class="ref-rules">{rules.join(' · ')}</p>}
      {nested && (
        <details class="ref-nested">
          <summary>Fields of {name}</summary>
          <Fields doc={doc} schema={nested} />
        </details>
      )}
    </li>
  );
}

/** A parameter list (path, query or header) in the same form as an object's fields. */
export function ParameterFields({ doc, params }: { doc: Document; params: { name: string; required?: boolean; description?: string; schema?: Schema }[] }) {
  return (
    <ul class="ref-fields">
      {params.map((p) => (
        <Field key={p.name} doc={doc} name={p.name} required={!!p.required} schema={{ ...p.schema, description: p.description ?? p.schema?.description }} />
      ))}
    </ul>
  );
}

export function Block({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <div class="ref-block">
      <h4>{title}</h4>
      {children}
    </div>
  );
}
