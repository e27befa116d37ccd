// The Mintworks developer console: sign-in, then one page per URL under /console.
import { AppsIcon, AuditIcon, ChainIcon, Logo, SignOutIcon } from './icons';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { api, onSignedOut } from './api';
import { interceptLinks, useLocation } from './router';
import { useApi } from './hooks';
import type { AppSummary, SessionInfo } from '../../src/services/console/types';
import { SignIn } from './pages/signin';
import { AppsPage } from './pages/apps';
import { OverviewPage } from './pages/overview';
import { UsersPage, UserPage } from './pages/users';
import { AssetsPage, AssetPage } from './pages/assets';
import { CollectionsPage } from './pages/collections';
import { CollectionPage } from './pages/collection';
import { RewardsPage, RewardPage } from './pages/rewards';
import { WebhookPage } from './pages/webhook';
import { KeysPage } from './pages/keys';
import { ChainPage, ChainsPage } from './pages/chains';
import { AuditPage } from './pages/audit';

type State = 'checking' | 'signed-in' | 'signed-out';

function Root() {
  const [state, setState] = useState<State>('checking');
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    api<SessionInfo>('GET', '/session').then(
      (s) => setState(s.signed_in ? 'signed-in' : 'signed-out'),
      () => setState('signed-out'),
    );
    return onSignedOut(() => {
      setNotice('Your session has ended. Sign in again to continue.');
      setState('signed-out');
    });
  }, []);

  useEffect(() => interceptLinks(document.body), []);

  if (state === 'checking') return <p class="muted boot">Loading…</p>;
  if (state === 'signed-out')
    return (
      <SignIn
        notice={notice}
        onSignedIn={() => {
          setNotice(null);
          setState('signed-in');
        }}
      />
    );
  return (
    <Shell
      onSignOut={async () => {
        await api('DELETE', '/session').catch(() => undefined);
        setNotice('You have signed out.');
        setState('signed-out');
      }}
    />
  );
}

const APP_TABS = [
  ['', 'Overview'],
  ['/users', 'Users'],
  ['/assets', 'Assets'],
  ['/collections', 'Collections'],
  ['/rewards', 'Rewards'],
  ['/webhook', 'Webhook'],
  ['/keys', 'Keys'],
] as const;

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const loc = useLocation();
  const m = /^\/console\/apps\/(\d+)(\/[a-z]+)?(?:\/([^/]+))?$/.exec(loc.path);
  const appUid = m?.[1];
  const section = m?.[2] ?? '';
  const sub = m?.[3] ? decodeURIComponent(m[3]) : undefined;
  const app = useApi<AppSummary>(appUid ? `/apps/${appUid}` : null);

  const chainMatch = /^\/console\/chains(?:\/(\d+))?$/.exec(loc.path);
  let page;
  if (loc.path === '/console') page = <AppsPage />;
  else if (chainMatch) page = chainMatch[1] ? <ChainPage chainId={chainMatch[1]} /> : <ChainsPage />;
  else if (loc.path === '/console/audit') page = <AuditPage loc={loc} />;
  else if (!appUid) page = <NotFound />;
  else if (section === '' && !sub) page = <OverviewPage appUid={appUid} />;
  else if (section === '/users') page = sub ? <UserPage appUid={appUid} userUid={sub} /> : <UsersPage appUid={appUid} loc={loc} />;
  else if (section === '/assets') page = sub ? <AssetPage appUid={appUid} assetUid={sub} /> : <AssetsPage appUid={appUid} loc={loc} />;
  else if (section === '/collections') page = sub ? <CollectionPage appUid={appUid} collectionUid={sub} /> : <CollectionsPage appUid={appUid} />;
  else if (section === '/rewards') page = sub ? <RewardPage appUid={appUid} rewardUid={sub} loc={loc} /> : <RewardsPage appUid={appUid} />;
  else if (section === '/webhook' && !sub) page = <WebhookPage appUid={appUid} loc={loc} />;
  else if (section === '/keys' && !sub) page = <KeysPage appUid={appUid} />;
  else page = <NotFound />;

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console">
          <Logo />
          <span>
            Mintworks <span class="brand-sub">console</span>
          </span>
        </a>
        {appUid && (
          <span class="crumb">
            <span aria-hidden="true">/</span> <a href={`/console/apps/${appUid}`}>{app.data?.name ?? appUid}</a>
            {app.data && <span class={`env ${app.data.environment}`}>{app.data.environment}</span>}
          </span>
        )}
        <span class="spacer" />
        <nav class="top-nav" aria-label="Console">
          <a href="/console" aria-current={loc.path === '/console' ? 'page' : undefined}>
            <AppsIcon />
            <span>Apps</span>
          </a>
          <a href="/console/chains" aria-current={chainMatch ? 'page' : undefined}>
            <ChainIcon />
            <span>Chains</span>
          </a>
          <a href="/console/audit" aria-current={loc.path === '/console/audit' ? 'page' : undefined}>
            <AuditIcon />
            <span>Audit log</span>
          </a>
          <button type="button" class="link" onClick={onSignOut}>
            <SignOutIcon />
            <span>Sign out</span>
          </button>
        </nav>
      </header>
      {appUid && (
        <nav class="tabs" aria-label="App sections">
          <ul>
            {APP_TABS.map(([path, label]) => (
              <li key={path}>
                <a href={`/console/apps/${appUid}${path}`} aria-current={section === path ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      )}
      <main id="main" tabIndex={-1}>
        {app.error && app.error.status === 404 ? <NotFound what="App" /> : page}
      </main>
    </>
  );
}

function NotFound({ what = 'Page' }: { what?: string }) {
  return (
    <>
      <h1>{what} not found</h1>
      <p>
        <a href="/console">Back to the Apps</a>
      </p>
    </>
  );
}

render(<Root />, document.getElementById('root')!);
