import {
  answerTexts,
  DESKTOP,
  newConversation,
  PHONE,
  screenshot,
  send,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(120_000);

let web: WebHarness;
useWebHarness((started) => (web = started));

const SCREENS = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const;

describe('the portal web client, failed turns and approvals', () => {
  it.each(SCREENS)(
    'says why a turn failed, live and after a reload, and Retry sends it again (%s)',
    async (_, screen) => {
      const page = await web.signedInPage(screen);
      await newConversation(page);
      web.script({
        kind: 'error',
        status: 401,
        body: { error: { message: 'Incorrect API key provided', type: 'auth', code: null } },
      });
      await send(page, 'Hello there');
      const note = page.locator('.turn-note[data-turn-status="failed"]');
      const reason = 'This turn failed: The model could not be reached or answered with an error.';
      for (const when of ['live', 'reloaded']) {
        expect(
          await until(
            () => note.textContent(),
            (t) => !!t?.includes('model_error'),
          ),
        ).toBe(`${reason}Code for support: model_error${'Retry'}`);
        await screenshot(page, `failed ${when}`);
        if (when === 'live') {
          await page.reload();
          await page.getByLabel('Message').waitFor();
        }
      }
      web.script('Back on track.');
      await page.getByRole('button', { name: 'Retry' }).click();
      expect(await eventually(() => answerTexts(page), ['Back on track.'])).toEqual(['Back on track.']);
      // The failed turn keeps its reason; only the latest turn offers Retry.
      expect(await note.textContent()).toContain(reason);
      expect(await page.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      expect(await page.locator('article[data-role="user"]').allTextContents()).toEqual([
        'Hello there',
        'Hello there',
      ]);
      await page.context().close();
    },
  );

  it.each(SCREENS)('shows every argument of an approval in full, inside the card (%s)', async (_, screen) => {
    const page = await web.signedInPage(screen);
    await newConversation(page);
    const env = `prod; ${'x'.repeat(400)} DROP TABLE customers CASCADE`;
    web.script(
      { toolCalls: [{ name: 'deploy', arguments: { env, note: 'the last word matters' } }] },
      'Denied, fine.',
    );
    await send(page, 'Deploy');
    const card = page.locator('[data-block-kind="approval_request"]');
    await card.getByRole('button', { name: 'Approve' }).waitFor();
    const args = card.locator('.tool-args');
    expect(JSON.parse((await args.textContent())!)).toEqual({ env, note: 'the last word matters' });
    expect(await args.textContent()).toContain('DROP TABLE customers CASCADE');
    // Nothing runs past the card: long values wrap (no sideways overflow), the box scrolls down.
    const fit = await args.evaluate((el) => {
      const box = el.getBoundingClientRect();
      const card = el.closest('[data-block-kind]')!.getBoundingClientRect();
      return { overflowX: el.scrollWidth - el.clientWidth, inside: box.right <= card.right + 0.5 };
    });
    expect(fit).toEqual({ overflowX: 0, inside: true });
    await screenshot(page, 'approval');
    await card.getByRole('button', { name: 'Deny' }).click();
    await eventually(() => answerTexts(page), ['Denied, fine.']);
    await page.context().close();
  });
});
