// Every page of the developer console, as scripts/console-screenshots.mjs shows it (the same service,
// data and pages), in Debian's chromium: at 390 px nothing is wider than the screen; no number is
// written with an exponent and the amounts carry their unit; and each page at 1440 and 390 px looks
// like its stored screenshot in docs/console/ (a tolerant comparison: ids and relative times differ
// from run to run, a page that lost its layout does not pass). After a deliberate change of the
// console, `node scripts/console-screenshots.mjs` writes the new references.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
// @ts-expect-error: a script of the repository, plain JavaScript
import { consolePages, openPage, root, signIn, startDemo, WIDTHS } from '../../scripts/console-screenshots.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The share of pixels that may differ from the reference (by more than a small step of colour). */
const TOLERANCE = 0.2;

type Demo = Awaited<ReturnType<typeof startDemo>>;

/** The share of pixels that differ between two PNG screenshots of the same size (1 when the sizes differ). */
async function difference(page: Page, a: Buffer, b: Buffer): Promise<number> {
  return page.evaluate(
    async ([x, y]) => {
      const load = (src: string) =>
        new Promise<HTMLImageElement>((resolve, reject) => {
          const img = new Image();
          img.onload = () => resolve(img);
          img.onerror = reject;
          img.src = src;
        });
      const [i, j] = await Promise.all([load(x), load(y)]);
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
      let differ = 0;
      for (let k = 0; k < p.length; k += 4)
        if (Math.abs(p[k] - q[k]) > 48 || Math.abs(p[k + 1] - q[k + 1]) > 48 || Math.abs(p[k + 2] - q[k + 2]) > 48) differ++;
      return differ / (p.length / 4);
    },
    [`data:image/png;base64,${a.toString('base64')}`, `data:image/png;base64,${b.toString('base64')}`],
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
    for (const p of consolePages(d) as [string, string, string][]) {
      for (const width of WIDTHS as number[]) {
        await openPage(page, d, p, width);
        const shown = await page.evaluate(() => ({
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered (what a reader sees), not the DOM's
          text: document.body.innerText,
        }));
        if (width === 390 && shown.overflow > 0) problems.push(`${p[0]}: ${shown.overflow} px wider than the screen at 390 px`);
        // Not inside a hex value (an address shortened to `0x12ab…2603e7`).
        const exponent = /(?<![\w.…])\d+(\.\d+)?e[-+]?\d+(?![\w.…])/i.exec(shown.text);
        if (exponent) problems.push(`${p[0]} at ${width} px: a number with an exponent: ${exponent[0]}`);
        if (p[0] === 'reward') {
          for (const a of ['0.000000000000000001 GEM', '1,234.5 GEM', '1,000,000 GEM'])
            if (!shown.text.includes(a)) problems.push(`${p[0]} at ${width} px: no "${a}"`);
        }
        if (p[0] === 'chain' && !/\d ETH\b/.test(shown.text)) problems.push(`chain at ${width} px: no balance in ETH`);
        const reference = path.join(root, 'docs/console', `${p[0]}-${width}.png`);
        if (!fs.existsSync(reference)) {
          problems.push(`no stored screenshot ${path.relative(root, reference)} (node scripts/console-screenshots.mjs)`);
          continue;
        }
        const share = await difference(blank, await page.screenshot(), fs.readFileSync(reference));
        if (share > TOLERANCE)
          problems.push(`${p[0]} at ${width} px: ${(share * 100).toFixed(1)} % of the pixels differ from ${path.relative(root, reference)}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
