import { useState } from 'preact/hooks';
import { post } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import type { ApiKeyInfo, AppCredentials, BearerToken } from '../../../src/services/console/types';
import { CopyButton, ErrorBox, Field, Loading, Mono, Secret, Section, Time, useAction } from '../ui';

export function KeysPage({ appUid }: { appUid: string }) {
  const key = useApi<ApiKeyInfo>(`/apps/${appUid}/keys`);
  const heading = useFocusHeading(`keys-${appUid}`);
  const [confirm, setConfirm] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const rotate = useAction(() => post<AppCredentials>(`/apps/${appUid}/keys/rotate`));
  const [ttl, setTtl] = useState(3600);
  const [token, setToken] = useState<BearerToken | null>(null);
  const makeToken = useAction(() => post<BearerToken>(`/apps/${appUid}/keys/token`, { expires_in_seconds: ttl }));
  const base = `${location.origin}/v1`;

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        API keys
      </h1>
      <ErrorBox error={key.error} />
      {!key.data ? (
        !key.error && <Loading />
      ) : (
        <>
          <dl class="props">
            <dt>API key</dt>
            <dd>
              <Mono>{key.data.api_key}</Mono> <CopyButton value={key.data.api_key} label="API key" />
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={key.data.created_at} />
            </dd>
            <dt>Base URL</dt>
            <dd>
              <Mono>{base}</Mono>
            </dd>
          </dl>
          <p class="muted">
            SDKs send the key as <code>X-API-KEY</code> and a bearer token signed (HS256) with the secret. The secret was shown when the App was created; rotate
            it to get a new one.
          </p>

          <Section title="Rotate the secret">
            <p>A new secret replaces the current one at once (within 30 seconds for requests in flight): tokens signed with the old secret stop working.</p>
            <ErrorBox error={rotate.error} />
            {secret ? (
              <div class="card callout" role="status">
                <p>Copy the new secret now: it is shown only this once.</p>
                <Secret label="API secret" value={secret} />
                <button type="button" onClick={() => setSecret(null)}>
                  Done
                </button>
              </div>
            ) : confirm ? (
              <fieldset class="row" aria-label="Confirm rotation">
                <button
                  type="button"
                  class="danger"
                  disabled={rotate.busy}
                  onClick={async () => {
                    const r = await rotate.run();
                    if (r) {
                      setSecret(r.api_secret);
                      setConfirm(false);
                    }
                  }}
                >
                  Yes, rotate the secret
                </button>
                <button type="button" onClick={() => setConfirm(false)}>
                  Cancel
                </button>
              </fieldset>
            ) : (
              <button type="button" class="danger" onClick={() => setConfirm(true)}>
                Rotate secret
              </button>
            )}
          </Section>

          <Section title="Bearer token">
            <p>A token for trying the API with curl, signed with the current secret.</p>
            <form
              class="row"
              onSubmit={async (e) => {
                e.preventDefault();
                const t = await makeToken.run();
                if (t) setToken(t);
              }}
            >
              <Field label="Valid for" id="token-ttl">
                <select id="token-ttl" value={String(ttl)} onChange={(e) => setTtl(Number(e.currentTarget.value))}>
                  <option value="3600">1 hour</option>
                  <option value="86400">1 day</option>
                  <option value="604800">7 days</option>
                </select>
              </Field>
              <button type="submit" disabled={makeToken.busy}>
                Create token
              </button>
            </form>
            <ErrorBox error={makeToken.error} />
            {token && (
              <div class="card">
                <Secret label="Bearer token" value={token.token} />
                <p class="muted">
                  Expires <Time iso={token.expires_at} />.
                </p>
                {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling block must take the keyboard focus to be scrolled without a mouse */}
                {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: its name is what a screen reader announces on that focus */}
                <pre class="json" tabIndex={0} aria-label="Example request">
                  {`curl -H "X-API-KEY: ${key.data.api_key}" \\\n     -H "Authorization: Bearer ${token.token}" \\\n     ${base}/collection/<uid>`}
                </pre>
              </div>
            )}
          </Section>
        </>
      )}
    </>
  );
}
