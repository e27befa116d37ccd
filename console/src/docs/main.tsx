// The API reference served at /docs: the service's own OpenAPI document (/openapi.json) read in the
// browser and shown in the console's style, from the service's own files (nothing fetched elsewhere).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import '../styles.css';
import './docs.css';
import { Logo } from '../icons';
import { type Document, groups } from './openapi';
import { EndpointSection } from './endpoint';
import { Fields, Prose } from './schema';

function Reference({ doc }: { doc: Document }) {
  const list = groups(doc);
  const schemes = Object.entries(doc.components?.securitySchemes ?? {});
  const schemas = Object.entries(doc.components?.schemas ?? {});
  const nav = (
    <ul>
      <li>
        <a href="#introduction">Introduction</a>
      </li>
      {list.map((g) => (
        <li key={g.id}>
          <a href={`#${g.id}`}>{g.title}</a>
          <ul>
            {g.endpoints.map((e) => (
              <li key={e.id}>
                <a href={`#${e.id}`}>
                  <span class={`method small ${e.method}`}>{e.method.toUpperCase()}</span> {e.op.summary}
                </a>
              </li>
            ))}
          </ul>
        </li>
      ))}
      <li>
        <a href="#schemas">Schemas</a>
      </li>
    </ul>
  );
  return (
    <>
      <header class="top">
        <a class="brand" href="/docs">
          <Logo />
          <span>
            Mintworks <span class="brand-sub">API reference</span>
          </span>
        </a>
        <span class="env">v{doc.info.version}</span>
        <span class="spacer" />
        <nav class="top-nav" aria-label="Service">
          <a href="/console">Console</a>
          <a href="/openapi.json">OpenAPI JSON</a>
        </nav>
      </header>
      <div class="ref-layout">
        <nav class="ref-side" aria-label="Endpoints">
          {nav}
        </nav>
        <main id="main" class="ref-content">
          <details class="ref-jump">
            <summary>Endpoints</summary>
            {nav}
          </details>
          <section id="introduction" class="ref-intro">
            <h1>{doc.info.title}</h1>
            <p>
              <Prose text={doc.info.description} />
            </p>
            {doc.servers?.[0] && (
              <p>
                Base URL <code>{doc.servers[0].url}</code>
              </p>
            )}
            <h2>Authentication</h2>
            <ul class="ref-fields">
              {schemes.map(([name, s]) => (
                <li key={name} class="ref-field">
                  <div class="ref-field-head">
                    <code class="ref-name">{s.type === 'apiKey' ? `${s.name} header` : `Authorization: Bearer`}</code>
                    <span class="ref-type">{name}</span>
                  </div>
                  <p class="ref-desc">{s.description}</p>
                </li>
              ))}
            </ul>
          </section>
          {list.map((g) => (
            <section key={g.id} id={g.id} class="ref-group" aria-label={g.title}>
              <h2>{g.title}</h2>
              {g.endpoints.map((e) => (
                <EndpointSection key={e.id} doc={doc} e={e} />
              ))}
            </section>
          ))}
          <section id="schemas" class="ref-group">
            <h2>Schemas</h2>
            {schemas.map(([name, s]) => (
              <section key={name} id={`schema-${name}`} class="ref-schema" aria-label={name}>
                <h3>{name}</h3>
                {s.description && (
                  <p>
                    <Prose text={s.description} />
                  </p>
                )}
                <Fields doc={doc} schema={s} />
              </section>
            ))}
          </section>
        </main>
      </div>
    </>
  );
}

function Root() {
  const [doc, setDoc] = useState<Document | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    fetch('/openapi.json')
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`/openapi.json answered ${r.status}`))))
      .then(setDoc, (err: Error) => setError(err.message));
  }, []);
  useEffect(() => {
    // The page renders after the document arrives: a link's #anchor is found only then.
    if (doc && location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
  }, [doc]);
  if (error)
    return (
      <p class="error boot" role="alert">
        The API reference could not be read: {error}
      </p>
    );
  if (!doc) return <p class="muted boot">Loading the API reference…</p>;
  return <Reference doc={doc} />;
}

render(<Root />, document.getElementById('root')!);
