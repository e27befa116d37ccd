import { useEffect, useState } from 'preact/hooks';
import { type ApiFailure, get, post, put, qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import { navigate, withQuery, type Location } from '../router';
import type { DeliveryRow, Page, WebhookConfig, WebhookSettings } from '../../../src/services/console/types';
import { ErrorBox, Field, Loading, onInput, Pager, Secret, Section, Status, Table, Time, Uid, useAction } from '../ui';

/** The App's webhook (null when none is configured) and the event types a filter may name. */
function useWebhook(appUid: string) {
  const [config, setConfig] = useState<WebhookConfig | null | undefined>(undefined);
  const [types, setTypes] = useState<string[]>([]);
  const [error, setError] = useState<ApiFailure | undefined>();
  useEffect(() => {
    get<WebhookSettings>(`/apps/${appUid}/webhook/settings`).then(
      (s) => {
        setConfig(s.webhook);
        setTypes(s.event_types);
        setError(undefined);
      },
      (err: ApiFailure) => setError(err),
    );
  }, [appUid]);
  return { config, setConfig, types, error };
}

export function WebhookPage({ appUid, loc }: { appUid: string; loc: Location }) {
  const heading = useFocusHeading(`webhook-${appUid}`);
  const wh = useWebhook(appUid);
  const status = loc.query.get('status') ?? '';
  const after = loc.query.get('after') ?? undefined;
  const log = useApi<Page<DeliveryRow>>(`/apps/${appUid}/webhook/log${qs({ status, cursor: after })}`, (d) =>
    d?.items.some((r) => r.status === 'pending') ? 1500 : after ? false : 5000,
  );

  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const [enabled, setEnabled] = useState(true);
  const [secret, setSecret] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  useEffect(() => {
    if (wh.config) {
      setUrl(wh.config.url);
      setEvents(wh.config.events ?? []);
      setEnabled(wh.config.enabled);
    }
  }, [wh.config]);

  const save = useAction((rotate: boolean) =>
    put<WebhookConfig>(`/apps/${appUid}/webhook`, rotate ? { rotate_secret: true, enabled: wh.config?.enabled ?? true } : { url: url.trim(), events, enabled }),
  );
  const test = useAction(() => post<DeliveryRow>(`/apps/${appUid}/webhook/test`));
  const redeliver = useAction((id: string) => post(`/apps/${appUid}/webhook/events/${id}/redeliver`));

  const submit = async (e: Event, rotate = false) => {
    e.preventDefault();
    const r = await save.run(rotate);
    if (r) {
      if (r.secret) setSecret(r.secret);
      const { secret: _s, ...config } = r;
      wh.setConfig(config);
      setMessage(rotate ? 'Secret rotated: the old one keeps signing for 24 hours.' : wh.config ? 'Webhook saved.' : 'Webhook created.');
    }
  };

  const toggle = (type: string, on: boolean) => setEvents(on ? [...events, type] : events.filter((t) => t !== type));

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Webhook
      </h1>
      <ErrorBox error={wh.error} />
      {message && (
        <p role="status" class="notice">
          {message}
        </p>
      )}
      {secret && (
        <div class="card callout">
          <p>Copy the signing secret now: it is shown only this once.</p>
          <Secret label="Signing secret" value={secret} />
          <button type="button" onClick={() => setSecret(null)}>
            Done
          </button>
        </div>
      )}
      {wh.config === undefined ? (
        <Loading />
      ) : (
        <form class="card form" onSubmit={(e) => submit(e)} aria-label="Webhook settings">
          {wh.config && (
            <p class="muted">
              Signing key <Uid value={wh.config.key_id} label="key id" />
              {wh.config.previous_key_id && (
                <>
                  {' '}
                  (previous key <Uid value={wh.config.previous_key_id} label="key id" /> until <Time iso={wh.config.previous_key_valid_until} />)
                </>
              )}
              {!wh.config.enabled && wh.config.disabled_reason && <> · off: {wh.config.disabled_reason}</>}
            </p>
          )}
          <Field label="URL" id="webhook-url" wide error={save.error?.field('url')}>
            <input id="webhook-url" type="url" required placeholder="https://example.com/hooks/mintworks" value={url} onInput={onInput(setUrl)} />
          </Field>
          <fieldset>
            <legend>Events</legend>
            <p class="muted small-text">None checked: every event is sent.</p>
            <div class="checks">
              {wh.types.map((t) => (
                <div class="check" key={t}>
                  <input id={`event-${t}`} type="checkbox" checked={events.includes(t)} onChange={(e) => toggle(t, e.currentTarget.checked)} />
                  <label for={`event-${t}`}>{t}</label>
                </div>
              ))}
            </div>
          </fieldset>
          <div class="check">
            <input id="webhook-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
            <label for="webhook-enabled">On (send events)</label>
          </div>
          <ErrorBox error={save.error} />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={save.busy}>
              {wh.config ? 'Save webhook' : 'Create webhook'}
            </button>
            {wh.config && (
              <>
                <button type="button" disabled={save.busy} onClick={(e) => submit(e, true)}>
                  Rotate secret
                </button>
                <button
                  type="button"
                  disabled={test.busy || !wh.config.enabled}
                  onClick={async () => {
                    const r = await test.run();
                    if (r) {
                      setMessage(`Test event ${r.event_id} sent.`);
                      if (after || status) navigate(withQuery(loc, { after: undefined, status: undefined }));
                      else log.reload();
                    }
                  }}
                >
                  Send test event
                </button>
              </>
            )}
          </div>
          <ErrorBox error={test.error} />
        </form>
      )}

      <Section
        title="Delivery log"
        actions={
          <div class="field inline">
            <label for="log-status">Status</label>
            <select id="log-status" value={status} onChange={(e) => navigate(withQuery(loc, { status: e.currentTarget.value, after: undefined }))}>
              <option value="">Any</option>
              <option value="pending">pending</option>
              <option value="delivered">delivered</option>
              <option value="expired">expired</option>
              <option value="disabled">disabled</option>
            </select>
          </div>
        }
      >
        <ErrorBox error={log.error} />
        <ErrorBox error={redeliver.error} />
        {!log.data ? (
          <Loading />
        ) : (
          <>
            <Table
              caption="Webhook deliveries, newest event first"
              rows={log.data.items}
              rowKey={(d) => d.event_id}
              empty="No event sent yet."
              columns={[
                { title: 'Event id', cell: (d) => <Uid value={d.event_id} label="event id" /> },
                { title: 'Type', cell: (d) => d.event },
                { title: 'Time', cell: (d) => <Time iso={d.event_time} /> },
                { title: 'Status', cell: (d) => <Status value={d.status} /> },
                { title: 'Attempts', cell: (d) => d.attempts, class: 'num' },
                {
                  title: 'Last response',
                  cell: (d) =>
                    d.last_attempt_at ? (
                      <details>
                        <summary>
                          {d.last_status_code ?? 'no answer'} <Time iso={d.last_attempt_at} />
                        </summary>
                        {d.last_error && <p class="field-error small-text">{d.last_error}</p>}
                        {d.last_response && <pre class="json small-text">{d.last_response}</pre>}
                        {d.next_attempt_at && (
                          <p class="muted small-text">
                            Next attempt <Time iso={d.next_attempt_at} />
                          </p>
                        )}
                      </details>
                    ) : (
                      <span class="muted">not attempted yet</span>
                    ),
                },
                {
                  title: 'Actions',
                  cell: (d) => (
                    <button
                      type="button"
                      class="small"
                      aria-label={`Redeliver event ${d.event_id}`}
                      disabled={redeliver.busy}
                      onClick={async () => {
                        if (await redeliver.run(d.event_id)) {
                          setMessage(`Event ${d.event_id} queued for redelivery.`);
                          log.reload();
                        }
                      }}
                    >
                      Redeliver
                    </button>
                  ),
                },
              ]}
            />
            <Pager loc={loc} next={log.data.next_cursor} />
          </>
        )}
      </Section>
    </>
  );
}
