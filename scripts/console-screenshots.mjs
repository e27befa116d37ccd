// Screenshots of every page of the developer console, at 1440 and 390 px wide, into docs/console/
// (`<page>-<width>.png`): a service of its own (`node dist/main.js`, a temporary DATA_DIR, the Demo
// App), given a user, an asset, a reward with an allocation of the smallest amount, a webhook with a
// delivered test event (to a receiver of its own on 127.0.0.1) and a master key rotation (an audit
// entry with a before and an after), then every page in Debian's chromium (CHROMIUM_PATH) through
// playwright-core. test/browser/console-layout.test.ts runs
// the same pages and compares them with the stored screenshots.
//   npm run build && node scripts/console-screenshots.mjs [--out docs/console]
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const WIDTHS = [1440, 390];
const HEIGHT = { 1440: 900, 390: 844 };
const OPERATOR_TOKEN = 'operator-token-of-the-console-screenshots';

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function until(what, fn, ms = 120_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A service with the Demo App and a little of everything; `stop()` ends it and removes its data. */
export async function startDemo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mintworks-screens-'));
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, OPERATOR_TOKEN, LOG_LEVEL: 'warn' };
  // The webhook's receiver: every delivery is answered 204.
  const receiver = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const child = spawn(process.execPath, [path.join(root, 'dist/main.js')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await new Promise((resolve) => receiver.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until('the service', async () => child.exitCode === null && (await fetch(`${base}/health`)).status === 200);
    const demo = Object.fromEntries(
      fs
        .readFileSync(path.join(dataDir, 'demo.env'), 'utf8')
        .split('\n')
        .filter((l) => /^MW_/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const api = async (method, p, body) => {
      const r = await fetch(`${demo.MW_URL}${p}`, {
        method,
        headers: { 'X-API-KEY': demo.MW_API_KEY, Authorization: `Bearer ${demo.MW_TOKEN}`, 'Content-Type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = await r.json();
      if (!json.success) throw new Error(`${method} ${p}: ${JSON.stringify(json.error)}`);
      return json.data;
    };
    const user = (await api('POST', '/user', { email: 'player@example.com', user_external_id: 'player-1' })).uid;
    const asset = (
      await api('POST', '/asset', {
        user_uid: user,
        collection_uid: demo.MW_COLLECTION,
        asset_external_id: 'sword-1',
        sale_price_in_usd: 9.99,
        data: { name: 'Sword', unique_name: false, image_url: 'https://example.invalid/sword.png', store_image_on_ipfs: false },
      })
    ).uid;
    await until('the asset minted', async () => (await api('GET', `/asset/${asset}`)).is_minted);
    const cli = (...args) => JSON.parse(execFileSync(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], { env, encoding: 'utf8' }));
    const reward = cli('reward', 'create', '--app', demo.MW_APP, '--name', 'Gems', '--token-name', 'Gem', '--token-symbol', 'GEM', '--supply', '1000000').uid;
    await until('the reward deployed', async () => (await api('GET', `/reward/${reward}`)).status === 'deployed');
    await api('POST', '/reward/allocate', { reward_uid: reward, to_user_uid: user, amount: '0.000000000000000001', nonce: 1 });
    await api('POST', '/reward/allocate', { reward_uid: reward, to_user_uid: user, amount: '1234.5', nonce: 2 });
    // Settled before the pictures, and before the webhook exists (its only event is the test one).
    await until('the allocations settled', async () => (await api('GET', `/reward/allocate?user_uid=${user}`)).every((a) => a.status !== 'pending'));
    const operator = async (method, p, body) => {
      const r = await fetch(`${base}${p}`, {
        method,
        headers: { Authorization: `Bearer ${OPERATOR_TOKEN}`, 'Content-Type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = await r.json();
      if (!json.success) throw new Error(`${method} ${p}: ${JSON.stringify(json.error)}`);
      return json.data;
    };
    await operator('PUT', `/admin/v1/apps/${demo.MW_APP}/webhook`, {
      url: `http://127.0.0.1:${receiver.address().port}/hooks`,
      events: ['asset.burned'],
    });
    await operator('POST', `/console/api/apps/${demo.MW_APP}/webhook/test`);
    await until('the test event delivered', async () =>
      (await operator('GET', `/admin/v1/apps/${demo.MW_APP}/webhook/events`)).some((e) => e.status === 'delivered'),
    );
    cli('keys', 'rotate-master');
    return { base, app: demo.MW_APP, user, asset, reward, collection: demo.MW_COLLECTION, operatorToken: OPERATOR_TOKEN, stop };
  } catch (err) {
    await stop();
    throw new Error(`${err.message}\n${log.slice(-2000)}`);
  }
}

/** Every page of the console, by a short name, with the text that says it has loaded. */
export function consolePages(d) {
  const app = `/console/apps/${d.app}`;
  return [
    ['apps', '/console', 'Demo'],
    ['overview', app, 'At a glance'],
    ['users', `${app}/users`, 'player@example.com'],
    ['user', `${app}/users/${d.user}`, 'player-1'],
    ['assets', `${app}/assets`, 'Sword'],
    ['asset', `${app}/assets/${d.asset}`, 'Metadata'],
    ['collections', `${app}/collections`, 'deployed'],
    ['rewards', `${app}/rewards`, 'Gems'],
    ['reward', `${app}/rewards/${d.reward}`, '1,234.5 GEM'],
    ['webhook', `${app}/webhook`, 'Delivery log'],
    ['keys', `${app}/keys`, 'API key'],
    ['chains', '/console/chains', 'Chains'],
    ['chain', '/console/chains/31337', 'Relayers'],
    ['audit', '/console/audit', 'Audit log'],
    ['docs', '/docs', 'Mintworks'],
  ];
}

/** Signs a browser context in (the console's session cookie). */
export async function signIn(context, d) {
  const page = await context.newPage();
  await page.goto(`${d.base}/console`);
  await page.getByLabel('Operator token').fill(d.operatorToken);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Apps', level: 1 }).waitFor();
  await page.close();
}

/** Opens a page at a width and waits for its content (and the network) to settle. */
export async function openPage(page, d, [, url, marker], width) {
  await page.setViewportSize({ width, height: HEIGHT[width] });
  await page.goto(`${d.base}${url}`);
  await page.getByText(marker, { exact: false }).first().waitFor({ timeout: 30_000 });
  await page.waitForLoadState('networkidle');
  // The fonts in use loaded, and a frame painted after them.
  await page.evaluate(() => document.fonts.ready.then(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))));
}

async function main() {
  const out = path.resolve(process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1] : path.join(root, 'docs/console'));
  fs.mkdirSync(out, { recursive: true });
  const { chromium } = await import('playwright-core');
  const d = await startDemo();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  try {
    const context = await browser.newContext({ colorScheme: 'light' });
    await signIn(context, d);
    const page = await context.newPage();
    for (const p of consolePages(d))
      for (const width of WIDTHS) {
        await openPage(page, d, p, width);
        await page.screenshot({ path: path.join(out, `${p[0]}-${width}.png`) });
        console.log(`${p[0]}-${width}.png`);
      }
  } finally {
    await browser.close();
    await d.stop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
