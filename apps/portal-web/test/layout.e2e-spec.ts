import {
  announcement,
  answerTexts,
  DESKTOP,
  KEY,
  newConversation,
  PHONE,
  PHONE_KEYBOARD,
  screenshot,
  seriousViolations,
  send,
  settled,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(150_000);

let web: WebHarness;
useWebHarness((started) => (web = started));

describe('the portal web client, on every screen and for every reader', () => {
  it('keeps the conversation list in a drawer on a phone, and the composer usable with the keyboard open', async () => {
    const page = await web.signedInPage(PHONE);
    const nav = page.getByRole('navigation', { name: 'Conversations' });
    expect(await nav.isVisible()).toBe(false);
    await newConversation(page); // opens the drawer for the form; opening the conversation closes it
    expect(
      await until(
        () => nav.isVisible(),
        (v) => !v,
      ),
    ).toBe(false);
    web.script('Short answer.');
    await send(page, 'Hi from a phone');
    await settled(page);
    const scroller = page.locator('.scroller');
    expect((await scroller.boundingBox())!.width).toBeGreaterThanOrEqual(370);
    await screenshot(page, 'phone');

    // The keyboard takes half the screen: the transcript keeps room, the composer stays in view.
    await page.setViewportSize(PHONE_KEYBOARD);
    await page.getByLabel('Message').focus();
    expect((await scroller.boundingBox())!.height).toBeGreaterThanOrEqual(150);
    for (const target of [page.getByLabel('Message'), page.getByRole('button', { name: 'Send' })]) {
      const box = (await target.boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(PHONE_KEYBOARD.height);
    }
    await screenshot(page, 'phone keyboard');

    // The drawer opens over the page and closes with Escape, giving the focus back.
    await page.setViewportSize(PHONE);
    const toggle = page.getByRole('button', { name: 'Conversations' });
    await toggle.click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await nav
      .getByRole('link', { name: /Web client test|New conversation/ })
      .first()
      .waitFor();
    await screenshot(page, 'phone drawer');
    await page.keyboard.press('Escape');
    expect(
      await until(
        () => nav.isVisible(),
        (v) => !v,
      ),
    ).toBe(false);
    expect(await toggle.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.context().close();
  });

  it('has no serious accessibility violation: sign-in, every block kind, the approval card', async () => {
    const signIn = await web.browser.newPage({ viewport: DESKTOP });
    await signIn.goto(web.portal.baseURL + '/');
    await signIn.getByLabel('API key').waitFor();
    expect(await seriousViolations(signIn)).toEqual([]);
    await signIn.close();

    const page = await web.signedInPage();
    await newConversation(page);
    web.script({
      reasoning: 'Which region does the person mean?',
      text: 'Let me ask first.',
      toolCalls: [
        { name: 'ask_clarification', arguments: { question: 'Which region?', options: ['EU', 'US'] } },
      ],
    });
    await send(page, 'Set it up');
    await page.getByRole('button', { name: 'EU' }).waitFor();
    // A request that waits for the person is said in the live region.
    expect(await announcement(page)).toBe('The agent asks: Which region?');
    web.script({ toolCalls: [{ name: 'deploy', arguments: { env: 'eu-prod' } }] }, 'Deployed to EU.');
    await page.getByRole('button', { name: 'EU' }).click();
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    expect(
      await until(
        () => page.locator('#announcer').textContent(),
        (t) => t === 'The agent asks for approval to run deploy.',
      ),
    ).toBe('The agent asks for approval to run deploy.');
    expect(await seriousViolations(page)).toEqual([]); // the approval card, pending
    await approve.click();
    await eventually(() => answerTexts(page), ['Deployed to EU.']);
    await send(page, '/compact');
    await page.getByRole('separator', { name: 'Context summarised' }).waitFor({ timeout: 30_000 });
    await settled(page);
    const kinds = await page
      .locator('[data-block-kind]')
      .evaluateAll((els) => [...new Set(els.map((el) => el.getAttribute('data-block-kind')))]);
    expect(kinds.sort()).toEqual(
      [
        'approval_request',
        'clarification_request',
        'compaction',
        'text',
        'thinking',
        'tool_result',
        'tool_use',
      ].sort(),
    );
    // Dimmed messages above the summary and the thinking line included.
    expect(await page.locator('article.dimmed').count()).toBeGreaterThan(0);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'every block kind');
    await page.context().close();
  });

  it('says the connection is lost and comes back; a network failure while loading is not a sign-out', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script('Connected.');
    await send(page, 'Are you there?');
    await settled(page);
    const lost = page.getByRole('status').filter({ hasText: 'Connection lost' });
    await page.context().setOffline(true);
    await lost.waitFor();
    await screenshot(page, 'connection lost');
    await page.context().setOffline(false);
    await lost.waitFor({ state: 'detached' });

    // The portal does not answer while the page loads: the key stays, the page says so and tries again.
    let refused = 0;
    await page.route('**/v1/me', (route) =>
      refused++ < 2 ? route.abort('connectionrefused') : route.continue(),
    );
    await page.reload();
    await page.getByText(/cannot be reached/).waitFor();
    expect(await page.getByLabel('API key').count()).toBe(0);
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByLabel('Message').waitFor({ timeout: 15_000 });
    expect(await page.evaluate(() => localStorage.getItem('portal.apiKey'))).toBe(KEY);
    await page.context().close();
  });

  it('runs under a strict Content-Security-Policy with nothing refused', async () => {
    const csp = [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' blob:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ].join('; ');
    const context = await web.browser.newContext({ viewport: DESKTOP });
    // The page itself carries the policy (the stream and the API pass untouched).
    await context.route(
      (url) => url.pathname === '/' || url.pathname.startsWith('/c/'),
      async (route) => {
        const response = await route.fetch();
        await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': csp } });
      },
    );
    await context.addInitScript(() => {
      const w = window as unknown as { refused: string[] };
      w.refused = [];
      document.addEventListener('securitypolicyviolation', (e) =>
        w.refused.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    const page = await context.newPage();
    await page.goto(web.portal.baseURL + '/');
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('switch', { name: 'Formatted replies' }).check();
    await newConversation(page);
    web.script('## Plan\n\n```json\n{"a": 1}\n```');
    await send(page, 'A plan please');
    await settled(page);
    await page.locator('article[data-role="assistant"] h2', { hasText: 'Plan' }).waitFor();
    await page.getByRole('meter', { name: 'Context' }).waitFor();
    await page.reload();
    await page.locator('article[data-role="assistant"] h2', { hasText: 'Plan' }).waitFor();
    const refused = () => page.evaluate(() => (window as unknown as { refused: string[] }).refused);
    expect(await refused()).toEqual([]);
    // The policy is in force: an inline style set now is refused and seen.
    await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    expect(await until(refused, (r) => r.length > 0)).toEqual([expect.stringMatching(/^style-src/)]);
    await context.close();
  });

  it('serves a favicon, and no inline script or style', async () => {
    const res = await fetch(`${web.portal.baseURL}/favicon.svg`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/image\/svg\+xml/);
    const html = await (await fetch(`${web.portal.baseURL}/`)).text();
    expect(html).toContain('<link rel="icon" href="/favicon.svg"');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
  });
});
