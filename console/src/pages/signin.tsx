import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, onInput, useAction } from '../ui';
import { useFocusHeading } from '../hooks';

export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const action = useAction(async () => api('POST', '/session', { token }));
  const heading = useFocusHeading('signin');
  const submit = async (e: Event) => {
    e.preventDefault();
    if ((await action.run()) !== undefined) onSignedIn();
  };
  return (
    <main id="main" class="signin">
      <form onSubmit={submit} class="card" aria-labelledby="signin-title">
        <h1 id="signin-title" ref={heading} tabIndex={-1}>
          Mintworks console
        </h1>
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <div class="field">
          <label for="operator-token">Operator token</label>
          <input
            id="operator-token"
            name="token"
            type="password"
            autoComplete="current-password"
            required
            value={token}
            onInput={onInput(setToken)}
            aria-describedby="operator-token-hint"
            aria-invalid={action.error ? true : undefined}
          />
          <small id="operator-token-hint" class="muted">
            Printed when the service first started; kept in <code>data/operator.token</code> (or set as <code>OPERATOR_TOKEN</code>).
          </small>
        </div>
        <ErrorBox error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
