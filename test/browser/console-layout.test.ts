// Every page of the developer console, as scripts/console-screenshots.mjs shows it (the same service,
// data and pages), in Debian's chromium: at 390 px nothing is wider than the screen; no number is
// written with an exponent and the amounts carry their unit; every identifier has its copy button; the
// audit log's details are rendered (a change as before → after), not JSON; and each page at 1440 and 390 px looks
// like its stored screenshot in docs/console/ (a tolerant comparison: what differs from run to run by
// design is left out and antialiasing is forgiven; a page that lost its layout does not pass). After a deliberate change of the
// console, `node scripts/console-screenshots.mjs` writes the new references.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
// @ts-expect-error: a script of the repository, plain JavaScript
import { consolePages, openPage, root, signIn, startDemo, WIDTHS } from '../../scripts/console-screenshots.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/**
 * The share of compared pixels that may differ from the reference. A page that changed its layout (a
 * form back in half the width, a lost sidebar, a column moved) differs in several percent of them;
 * font antialiasing, a cursor and a one-pixel nudge in none, once what changes between runs is left out.
 */
const TOLERANCE = 0.005;
/**
 * What differs from run to run by design, left out of the comparison: relative times, identifiers
 * (random uids, hashes), the chart (its hours are the clock's), a chain's head and fees.
 */
const VOLATILE = 'time, .uid, canvas, [data-volatile]';

type Demo = Awaited<ReturnType<typeof startDemo>>;
type Box = { x: number; y: number; width: number; height: number };

/** Where the volatile parts of the page are on the screen, each widened by a few pixels. */
async function volatileBoxes(page: Page): Promise<Box[]> {
  return page.$$eval(VOLATILE, (els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return { x: r.x - 3, y: r.y - 3, width: r.width + 6, height: r.height + 6 };
    }),
  );
}

/**
 * The share of pixels that differ between a screenshot and its reference (1 when the sizes differ),
 * outside the volatile boxes. A pixel differs when its colour is off by more than a step and no pixel
 * next to it in the other picture has its colour either: antialiasing and subpixel text shift by one.
 */
async function difference(page: Page, a: Buffer, b: Buffer, skip: Box[]): Promise<number> {
  return page.evaluate(
    async ([x, y, boxes]) => {
      const load = (src: string) =>
        new Promise<HTMLImageElement>((resolve, reject) => {
          const img = new Image();
          img.onload = () => resolve(img);
          img.onerror = reject;
          img.src = src;
        });
      const [i, j] = await Promise.all([load(x as string), load(y as string)]);
      if (i.width !== j.width || i.height !== j.height) return 1;
      const pixels = (img: HTMLImageElement) => {
        const c = document.createElement('canvas');
        c.width = img.width;
        c.height = img.height;
        const g = c.getContext('2d')!;
        g.drawImage(img, 0, 0);
        return g.getImageData(0, 0, img.width, img.height).data;
      };
      const [p, q] = [pixels(i), pixels(j)];
      const w = i.width;
      const h = i.height;
      const skipped = new Uint8Array(w * h);
      for (const r of boxes as { x: number; y: number; width: number; height: number }[])
        for (let yy = Math.max(0, Math.floor(r.y)); yy < Math.min(h, Math.ceil(r.y + r.height)); yy++)
          skipped.fill(1, yy * w + Math.max(0, Math.floor(r.x)), yy * w + Math.min(w, Math.ceil(r.x + r.width)));
      const near = (u: Uint8ClampedArray, k: number, v: Uint8ClampedArray, m: number) =>
        Math.abs(u[k] - v[m]) <= 40 && Math.abs(u[k + 1] - v[m + 1]) <= 40 && Math.abs(u[k + 2] - v[m + 2]) <= 40;
      /** Some pixel within one of (px, py) in `other` has the colour of `own` at (px, py). */
      const matchedNearby = (own: Uint8ClampedArray, other: Uint8ClampedArray, px: number, py: number) => {
        for (let dy = -1; dy <= 1; dy++)
          for (let dx = -1; dx <= 1; dx++) {
            const nx = px + dx;
            const ny = py + dy;
            if (nx >= 0 && ny >= 0 && nx < w && ny < h && near(own, (py * w + px) * 4, other, (ny * w + nx) * 4)) return true;
          }
        return false;
      };
      let compared = 0;
      let differ = 0;
      for (let py = 0; py < h; py++)
        for (let px = 0; px < w; px++) {
          if (skipped[py * w + px]) continue;
          compared++;
          const k = (py * w + px) * 4;
          if (near(p, k, q, k)) continue;
          if (matchedNearby(p, q, px, py) && matchedNearby(q, p, px, py)) continue;
          differ++;
        }
      return compared ? differ / compared : 0;
    },
    [`data:image/png;base64,${a.toString('base64')}`, `data:image/png;base64,${b.toString('base64')}`, skip] as const,
  );
}

describe('every console page at 1440 and 390 px', () => {
  let d: Demo;
  let browser: Browser;
  let page: Page;
  let blank: Page;
  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `no browser at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`);
    [d, browser] = await Promise.all([startDemo(), chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] })]);
    const context = await browser.newContext({ colorScheme: 'light' });
    const other = await browser.newContext();
    // Functions handed to page.evaluate are compiled by tsx, which wraps named functions in a helper
    // (__name) that exists only in Node: give the pages a no-op one.
    for (const c of [context, other]) await c.addInitScript('globalThis.__name = (fn) => fn;');
    await signIn(context, d);
    page = await context.newPage();
    blank = await other.newPage();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('no page is wider than a 390 px screen; numbers have no exponent, amounts their unit; each looks like its screenshot', async () => {
    const problems: string[] = [];
    const shares: string[] = [];
    for (const p of consolePages(d) as [string, string, string][]) {
      for (const width of WIDTHS as number[]) {
        const requested: string[] = [];
        const onRequest = (r: { url: () => string }) => void requested.push(r.url());
        page.on('request', onRequest);
        await openPage(page, d, p, width);
        page.off('request', onRequest);
        // The API reference works offline: everything it loads comes from the service.
        if (p[0] === 'docs') for (const url of requested) if (!url.startsWith(`${d.base}/`)) problems.push(`docs at ${width} px: loaded ${url}`);
        const shown = await page.evaluate(() => ({
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered (what a reader sees), not the DOM's
          text: document.body.innerText,
        }));
        if (width === 390 && shown.overflow > 0) problems.push(`${p[0]}: ${shown.overflow} px wider than the screen at 390 px`);
        // Not inside a hex value (an address shortened to `0x12ab…2603e7`). JavaScript writes an exponent
        // with its sign (1e+21, 5e-7): without one, "5e295139" is random hex (an id), not a number.
        const exponent = /(?<![\w.…])\d+(\.\d+)?e[-+]\d+(?![\w.…])/i.exec(shown.text);
        if (exponent) problems.push(`${p[0]} at ${width} px: a number with an exponent: ${exponent[0]}`);
        if (p[0] === 'reward') {
          for (const a of ['0.000000000000000001 GEM', '1,234.5 GEM', '1,000,000 GEM'])
            if (!shown.text.includes(a)) problems.push(`${p[0]} at ${width} px: no "${a}"`);
        }
        if (p[0] === 'chain' && !/\d ETH\b/.test(shown.text)) problems.push(`chain at ${width} px: no balance in ETH`);
        // Every identifier on screen (a 12-digit uid, an address, a hash) is cut with its copy button.
        const bare = await page.evaluate(() => {
          const found: string[] = [];
          const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            // Not a part of a URL or of a number (the decimals of a balance).
            const id = /(?<![\w.,/])([1-9]\d{11}|0x[0-9a-f]{40,})(?![\w.,])/i.exec(n.textContent ?? '');
            if (id && !n.parentElement?.closest('.uid, pre, option')) found.push(`${id[0]} in ${n.parentElement?.outerHTML.slice(0, 120)}`);
          }
          return found;
        });
        if (bare.length) problems.push(`${p[0]} at ${width} px: identifiers without their copy button: ${bare.join(', ')}`);
        if (p[0] === 'audit' && !(await page.locator('[data-change="previous_key_id->key_id"]').count()))
          problems.push('audit: the master key rotation is not shown as before → after');
        if (p[0] === 'audit' && /\{"/.test(shown.text)) problems.push('audit: details shown as raw JSON');
        const reference = path.join(root, 'docs/console', `${p[0]}-${width}.png`);
        if (!fs.existsSync(reference)) {
          problems.push(`no stored screenshot ${path.relative(root, reference)} (node scripts/console-screenshots.mjs)`);
          continue;
        }
        const shot = await page.screenshot();
        const share = await difference(blank, shot, fs.readFileSync(reference), await volatileBoxes(page));
        shares.push(`${p[0]}-${width} ${(share * 100).toFixed(2)} %`);
        // The page as it looks now, to set beside the reference (every page's with KEEP_SCREENS=1).
        const seen = path.join(os.tmpdir(), 'mintworks-console-screens', `${p[0]}-${width}.png`);
        if (share > TOLERANCE || process.env.KEEP_SCREENS) {
          fs.mkdirSync(path.dirname(seen), { recursive: true });
          fs.writeFileSync(seen, shot);
        }
        if (share > TOLERANCE)
          problems.push(`${p[0]} at ${width} px: ${(share * 100).toFixed(1)} % of the pixels differ from ${path.relative(root, reference)} (now: ${seen})`);
      }
    }
    console.log(`differences from the stored screenshots: ${shares.join(', ')}`);
    assert.deepEqual(problems, []);
  });
});
