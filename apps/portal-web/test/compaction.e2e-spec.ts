import {
  answerTexts,
  newConversation,
  send,
  settled,
  slow,
  SMALL_AGENT,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(120_000);

let web: WebHarness;
useWebHarness((started) => (web = started));

describe('the portal web client, compaction', () => {
  it('shows /compact as a pill, summarises in place of the thinking indicator, then the divider', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script('Q3 revenue was $4.2M.');
    await send(page, 'Xin chào');
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Q3 revenue was $4.2M.'])).toEqual([
      'Q3 revenue was $4.2M.',
    ]);

    web.summaryPace = { chunkSize: 4, delayMs: 200 }; // a summary that takes about 6 s
    await send(page, '/compact keep the figures');

    // The typed command is drawn as a pill "Compact" with the instructions.
    const pill = page.locator('article[data-role="user"] .pill');
    await pill.waitFor();
    expect(await pill.textContent()).toBe('Compactkeep the figures');
    expect(await page.locator('article[data-role="user"]', { hasText: '/compact' }).count()).toBe(0);

    // While the summary is written: the divider with its rules, "Summarising conversation", a
    // clock after 3 s, and no thinking indicator.
    const summarising = page.getByRole('status').filter({ hasText: 'Summarising conversation' });
    await summarising.waitFor();
    expect(await page.locator('.thinking-indicator').count()).toBe(0);
    await page.locator('.compacting .clock:not([hidden])').waitFor({ timeout: 15_000 });
    web.summaryPace = { chunkSize: 8, delayMs: 10 };

    // Then the divider: a separator named "Context summarised" that opens to the summary.
    const divider = page.getByRole('separator', { name: 'Context summarised' });
    await divider.waitFor();
    await summarising.waitFor({ state: 'detached' });
    const block = page.locator('[data-block-kind="compaction"]');
    expect(await block.getAttribute('data-trigger')).toBe('MANUAL');
    expect(await block.locator('.auto-mark').count()).toBe(0);
    const summary = block.locator('.summary-text');
    expect(await summary.isVisible()).toBe(false);
    await divider.click();
    await summary.waitFor();
    const text = (await summary.textContent()) ?? '';
    expect(text).toContain('Revenue was $4.2M.');
    expect(text).not.toContain('ref:');

    // The messages above the newest compaction are dimmed until hovered.
    const first = page.locator('article').first();
    expect(await first.evaluate((el) => el.classList.contains('dimmed'))).toBe(true);
    const dimmed = await first.evaluate((el) => getComputedStyle(el).opacity);
    await first.hover();
    expect(
      await until(
        () => first.evaluate((el) => getComputedStyle(el).opacity),
        (o) => o === '1',
      ),
    ).toBe('1');
    expect(Number(dimmed)).toBeLessThan(1);
    await page.context().close();
  });

  it('refuses to send /compact while a turn runs, and says why', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(slow('A long answer that takes its time to arrive. '.repeat(10), 2, 50));
    await send(page, 'Talk for a while');
    await page.getByRole('button', { name: 'Cancel' }).waitFor();
    await send(page, '/compact');
    const notice = page.locator('.composer-notice');
    expect(
      await until(
        () => notice.textContent(),
        (t) => !!t,
      ),
    ).toMatch(/running.*\/compact|\/compact.*running/i);
    expect(await page.getByLabel('Message').inputValue()).toBe('/compact');
    expect(await page.locator('article[data-role="user"]').count()).toBe(1);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Cancel' }).waitFor({ state: 'hidden' });
    await page.context().close();
  });

  it('marks a compaction the agent chose as automatic', async () => {
    const page = await web.signedInPage();
    await newConversation(page, SMALL_AGENT);
    // A long first answer: replayed on the next turn, it takes the call past 85 % of the window.
    web.script('Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(480));
    await send(page, 'Write a lot');
    await settled(page);
    web.script('Short now.');
    await send(page, 'And now briefly');
    const divider = page.getByRole('separator', { name: 'Context summarised' });
    await divider.waitFor({ timeout: 30_000 });
    const block = page.locator('[data-block-kind="compaction"]');
    expect(await block.getAttribute('data-trigger')).toBe('AUTO');
    expect(await block.locator('.auto-mark').textContent()).toBe('automatic');
    expect(
      await until(
        () => answerTexts(page),
        (t) => t.at(-1) === 'Short now.',
        30_000,
      ),
    ).toContain('Short now.');
    await page.context().close();
  });
});
