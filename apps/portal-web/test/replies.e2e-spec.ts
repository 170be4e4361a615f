import { ApiClient } from '@portal/testing';
import {
  answerTexts,
  conversationId,
  KEY,
  newConversation,
  PHONE,
  screenshot,
  send,
  settled,
  slow,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(120_000);

let web: WebHarness;
useWebHarness((started) => (web = started));

/** Markdown and HTML that would run code, or leave a `javascript:` link, if anything let it through. */
const HOSTILE = [
  '# Report',
  '',
  'Some **bold** text and a [safe link](https://example.com/docs).',
  '',
  '<script>window.__pwned = "script"</script>',
  '<img src="x" onerror="window.__pwned = \'img\'">',
  '<svg onload="window.__pwned = \'svg\'"><circle r="1"/></svg>',
  '<iframe srcdoc="<script>parent.__pwned = \'iframe\'</script>"></iframe>',
  '<a href="javascript:window.__pwned = \'a\'">click</a>',
  '<a href=" JaVaScRiPt:window.__pwned = \'spaced\'">spaced</a>',
  '[md link](javascript:window.__pwned=%27md%27)',
  '<div onmouseover="window.__pwned = \'hover\'">hover me</div>',
  '<details open ontoggle="window.__pwned = \'toggle\'"><summary>x</summary></details>',
  '<form action="javascript:window.__pwned=1"><button>go</button></form>',
  '',
  '```python',
  'def total(xs):',
  '    return sum(xs)  # <img src=x onerror=alert(1)>',
  '```',
].join('\n');

describe('the portal web client, replies', () => {
  it('renders a settled reply formatted when switched on, with nothing hostile surviving', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const formatted = page.getByRole('switch', { name: 'Formatted replies' });
    expect(await formatted.isChecked()).toBe(false); // plain text by default
    await formatted.check();
    web.script(slow(HOSTILE, 12, 15));
    await send(page, 'Write the report');
    // Live text plays out as plain text either way.
    const live = page.locator('article[data-role="assistant"] [data-block-kind="text"].live');
    await live.waitFor();
    expect(await live.evaluate((el) => el.querySelector('h1, strong, pre') === null)).toBe(true);
    await settled(page);
    const reply = page.locator('article[data-role="assistant"] [data-block-kind="text"]');
    await reply.locator('h1', { hasText: 'Report' }).waitFor();
    await page.mouse.move(10, 10);
    await reply
      .locator('text=hover me')
      .hover()
      .catch(() => undefined);
    await page.waitForTimeout(300);
    const found = await reply.evaluate((el) => ({
      pwned: (window as unknown as { __pwned?: string }).__pwned ?? null,
      handlers: Array.from(el.querySelectorAll('*')).flatMap((n) =>
        Array.from(n.attributes)
          .filter((a) => a.name.startsWith('on'))
          .map((a) => `${n.tagName}.${a.name}`),
      ),
      scripts: el.querySelectorAll('script, iframe, svg, img, form').length,
      hrefs: Array.from(el.querySelectorAll('a')).map((a) => a.getAttribute('href')),
      strong: el.querySelector('strong')?.textContent,
      highlighted: el.querySelector('pre code.hljs .hljs-keyword')?.textContent,
      code: el.querySelector('pre code')?.textContent,
    }));
    expect(found).toMatchObject({
      pwned: null,
      handlers: [],
      scripts: 0,
      strong: 'bold',
      highlighted: 'def',
    });
    expect(found.hrefs.filter((href) => href && /^\s*javascript:/i.test(href))).toEqual([]);
    expect(found.hrefs).toContain('https://example.com/docs');
    expect(found.code).toBe('def total(xs):\n    return sum(xs)  # <img src=x onerror=alert(1)>\n');
    await screenshot(page, 'formatted');

    // The code block's copy button gives the code as written; the message's Copy the Markdown.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await reply.getByRole('button', { name: 'Copy code' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(found.code);
    await page
      .locator('article[data-role="assistant"]')
      .getByRole('button', { name: 'Copy', exact: true })
      .click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(HOSTILE);

    // Kept in the browser: a reload draws the reply formatted again; switched off, plain text.
    await page.reload();
    await reply.locator('h1').waitFor();
    await page.getByRole('switch', { name: 'Formatted replies' }).uncheck();
    expect(
      await until(
        () => reply.textContent(),
        (t) => t === HOSTILE,
      ),
    ).toBe(HOSTILE);
    await page.context().close();
  });

  it("copies each message as written, and shows each turn's tokens and cost and how full the context is", async () => {
    const page = await web.signedInPage(PHONE);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await newConversation(page);
    web.script({ text: 'Tiếng Việt: **đậm** 👩🏽‍💻', usage: { prompt_tokens: 30_000, completion_tokens: 120 } });
    await send(page, '/fact-check Xin chào');
    const id = await conversationId(page);
    await settled(page);
    await eventually(() => answerTexts(page), ['Tiếng Việt: **đậm** 👩🏽‍💻']);
    const copies = page.getByRole('button', { name: 'Copy', exact: true });
    expect(await copies.count()).toBe(2);
    await copies.nth(0).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('/fact-check Xin chào');
    await copies.nth(1).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('Tiếng Việt: **đậm** 👩🏽‍💻');

    // The turn's usage rows summed (its title call among them), as the API gives them.
    const api = new ApiClient(web.portal.baseURL, KEY);
    const number = new Intl.NumberFormat('en');
    const money = new Intl.NumberFormat('en', {
      style: 'currency',
      currency: 'USD',
      maximumFractionDigits: 4,
    });
    const usage = page.locator('.turn-usage');
    const shownAndApi = async () => {
      const { body } = await api.get(`/v1/conversations/${id}`);
      const u = body.turns[0].usage;
      const expected = `${number.format(u.inputTokens)} in · ${number.format(u.outputTokens)} out · ${money.format(u.cost)}`;
      return { shown: await usage.textContent(), expected, contextTokens: body.turns[0].contextTokens };
    };
    const seen = await until(shownAndApi, (r) => r.shown === r.expected);
    expect(seen.shown).toBe(seen.expected);
    expect(seen.contextTokens).toBe(30_000);
    expect(seen.expected).toMatch(/^[\d,]+ in · [\d,]+ out · \$0\.\d+$/);
    const meter = page.getByRole('meter', { name: 'Context' });
    expect(
      await until(
        () => meter.getAttribute('aria-valuenow'),
        (v) => v === '30000',
      ),
    ).toBe('30000');
    expect(await meter.getAttribute('aria-valuemax')).toBe('128000');
    expect(await meter.getAttribute('aria-valuetext')).toBe(
      'Context used: 30,000 of 128,000 tokens (23 %); it is summarised at 85 %',
    );
    // After a reload, from the API alone.
    await page.reload();
    const reloaded = await until(shownAndApi, (r) => r.shown === r.expected);
    expect(reloaded.shown).toBe(reloaded.expected);
    expect(
      await until(
        () => meter.getAttribute('aria-valuenow'),
        (v) => v === '30000',
      ),
    ).toBe('30000');
    await screenshot(page, 'usage');
    await page.context().close();
  });
});
