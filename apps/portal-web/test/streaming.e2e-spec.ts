import type { Page } from 'playwright-core';
import { splitGraphemes } from '@portal/render';
import {
  announcement,
  answerTexts,
  conversationId,
  KEY,
  newConversation,
  send,
  settled,
  slow,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(90_000);

/** Vietnamese with its tone marks both composed and decomposed, emoji with joiners, skin tones, flags. */
const SOURCE =
  'Xin chào! Tiếng Việt có dấu: người, đường, nghiêng, chuyện. ' +
  'Tổ hợp: Việt Nam, phở bò'.normalize('NFD') +
  ' — emoji 👩🏽‍💻 👨‍👩‍👧‍👦 👍🏿 🇻🇳 1️⃣ xong.';

let web: WebHarness;
useWebHarness((started) => (web = started));

describe('the portal web client, streaming', () => {
  it('signs in, starts a conversation, streams the answer and settles it as plain text', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(slow(SOURCE, 1, 25)); // one code point a piece: every cluster arrives split

    // Watch what the screen shows while the text plays out.
    await page.evaluate(() => {
      const w = window as unknown as { samples: string[] };
      w.samples = [];
      const look = () => {
        const live = document.querySelector('article[data-role="assistant"] [data-block-kind="text"].live');
        if (live) w.samples.push(live.textContent ?? '');
        if (w.samples.length < 5000) requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    });
    await send(page, 'Xin chào');
    const id = await conversationId(page);

    await page.locator('article[data-role="user"]', { hasText: 'Xin chào' }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).waitFor();
    await page.locator('[data-block-kind="text"][aria-busy="true"]').waitFor();
    await settled(page);

    // Settled: the block is the text itself, nothing else, exactly the source.
    const block = page.locator('article[data-role="assistant"] [data-block-kind="text"]');
    expect(await block.count()).toBe(1);
    expect(await block.textContent()).toBe(SOURCE);
    expect(await block.evaluate((el) => el.children.length)).toBe(0);
    await page.getByRole('button', { name: 'Cancel' }).waitFor({ state: 'hidden' });
    expect(page.url()).toContain(`/c/${id}`);

    // Never half a cluster: every sample ends on a cluster boundary of the source.
    const samples = await page.evaluate(() => (window as unknown as { samples: string[] }).samples);
    const clusters = splitGraphemes(SOURCE);
    expect(samples.length).toBeGreaterThan(0);
    for (const sample of samples) {
      const shown = splitGraphemes(sample);
      expect(shown).toEqual(clusters.slice(0, shown.length));
    }
    // The live region says the settled answer, once.
    const announcer = page.locator('#announcer');
    expect(
      await until(
        () => announcer.textContent(),
        (t) => t === SOURCE,
      ),
    ).toBe(SOURCE);
    await page.context().close();
  });

  it('marks narration and thinking, and sets narration one size below the answer', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(
      {
        reasoning: 'The person wants the figure. I should load the fact-check skill.',
        text: 'Let me check that.',
        toolCalls: [{ name: 'load_skill', arguments: { slug: 'fact-check' } }],
        delayMs: 20,
      },
      slow('Revenue was $4.2M in Q3.', 4, 30),
    );
    await send(page, 'What was the Q3 revenue?');
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Revenue was $4.2M in Q3.'])).toEqual([
      'Revenue was $4.2M in Q3.',
    ]);

    const assistant = page.locator('article[data-role="assistant"]');
    const narration = assistant.locator('[data-block-kind="text"][data-narration]');
    const answer = assistant.locator('[data-block-kind="text"]:not([data-narration])');
    const thinking = assistant.locator('[data-block-kind="thinking"]');
    expect(await narration.allTextContents()).toEqual(['Let me check that.']);
    expect(await thinking.count()).toBe(1);
    expect(await assistant.locator('[data-block-kind="tool_use"]').count()).toBe(1);
    expect(await assistant.locator('[data-block-kind="tool_result"]').count()).toBe(1);
    // Thinking is never opened: one line, no control to open it.
    expect(await thinking.locator('details, button, summary').count()).toBe(0);

    const size = (el: typeof answer) => el.evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
    const [answerSize, narrationSize, thinkingSize] = [
      await size(answer),
      await size(narration),
      await size(thinking),
    ];
    expect(narrationSize).toBeLessThan(answerSize);
    expect(thinkingSize).toBeLessThan(narrationSize);
    await page.context().close();
  });

  it('reopens the same conversation after a reload mid-turn, the answer shown exactly once', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const text = 'Một hai ba bốn năm sáu bảy tám chín mười. '.repeat(6) + 'Hết. 🇻🇳';
    web.script(slow(text, 2, 40));
    await send(page, 'Đếm đi');
    const id = await conversationId(page);
    // Part of the answer is on screen, the turn still runs.
    await page.waitForFunction(
      () => (document.querySelector('[data-block-kind="text"].live')?.textContent ?? '').length > 20,
    );
    await page.reload();
    expect(page.url()).toContain(`/c/${id}`);
    await page.locator('[data-block-kind="text"].live').waitFor(); // streaming resumed
    await settled(page);
    expect(await eventually(() => answerTexts(page), [text])).toEqual([text]);
    expect(await page.locator('article[data-role="user"]').count()).toBe(1);
    expect(await page.locator('article[data-role="assistant"]').count()).toBe(1);
    await page.context().close();
  });

  it('loses and doubles nothing when the gateway drops mid-turn', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const text = 'Alpha beta gamma delta epsilon zeta eta theta iota kappa. '.repeat(5).trim();
    web.script(slow(text, 2, 40));
    await send(page, 'Greek letters, please');
    await page.waitForFunction(
      () => (document.querySelector('[data-block-kind="text"].live')?.textContent ?? '').length > 10,
    );
    await web.portal.kill('gateway', 'SIGKILL');
    await web.portal.start('gateway');
    await settled(page);
    expect(await eventually(() => answerTexts(page), [text])).toEqual([text]);
    expect(await page.locator('article[data-role="assistant"]').count()).toBe(1);
    await page.context().close();
  });

  it('shows text as it arrives, without blur or breathing, for a reader who asked for less motion', async () => {
    const context = await web.browser.newContext({ reducedMotion: 'reduce' });
    const page = await context.newPage();
    await page.addInitScript((key) => localStorage.setItem('portal.apiKey', key), KEY);
    await page.goto(web.portal.baseURL + '/');
    await newConversation(page);
    const text = 'Chậm mà chắc. '.repeat(12).trim();
    web.script(slow(text, 3, 60));
    await send(page, 'Slowly');
    const live = page.locator('[data-block-kind="text"].live');
    await live.waitFor();
    const styles = await live.evaluate((el) => {
      const word = el.querySelector('.w');
      const caret = el.querySelector('.caret');
      return [word && getComputedStyle(word).animationName, caret && getComputedStyle(caret).animationName];
    });
    expect(styles.filter((s) => s !== null && s !== 'none')).toEqual([]);
    await settled(page);
    expect(await eventually(() => answerTexts(page), [text])).toEqual([text]);
    await context.close();
  });

  it('cancels a running turn; what was written stays', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const text = 'This is a long answer that keeps going and going. '.repeat(20);
    web.script(slow(text, 2, 60));
    await send(page, 'Write a lot');
    await page.waitForFunction(
      () => (document.querySelector('[data-block-kind="text"].live')?.textContent ?? '').length > 10,
    );
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('.turn-note[data-turn-status="cut_off"]').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).waitFor({ state: 'hidden' });
    await settled(page);
    const [partial] = await answerTexts(page);
    expect(partial.length).toBeGreaterThan(0);
    expect(text.startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(text.length);
    await page.context().close();
  });
});

/**
 * The page opens a conversation by reading it, opening its stream, then reading its transcript and
 * the conversation again; this holds the `n`th read of the conversation (1 or 2) back, so what
 * the turn does meanwhile arrives while the page loads.
 */
async function holdConversationRead(page: Page, n: 1 | 2, ms: number): Promise<void> {
  let reads = 0;
  await page.route(/\/v1\/conversations\/[^/?]+$/, async (route) => {
    if (route.request().method() === 'GET' && ++reads === n) await new Promise((r) => setTimeout(r, ms));
    await route.continue();
  });
}

describe('the live region, for a turn that moves while its conversation loads', () => {
  it('says a question that arrives on the stream while the transcript loads', async () => {
    const page = await web.signedInPage();
    await holdConversationRead(page, 2, 3000);
    await newConversation(page);
    web.script({
      toolCalls: [
        { name: 'ask_clarification', arguments: { question: 'Which region?', options: ['EU', 'US'] } },
      ],
      chunkSize: 1000,
      delayMs: 400,
    });
    await send(page, 'Set it up');
    await page.getByRole('button', { name: 'EU' }).waitFor();
    expect(await announcement(page, 5000)).toBe('The agent asks: Which region?');
    await page.context().close();
  });

  it('says the answer to a first message that settled before the page first read its conversation', async () => {
    const page = await web.signedInPage();
    await holdConversationRead(page, 1, 1500);
    await newConversation(page);
    web.script({ text: 'Done already.' });
    await send(page, 'Quick one');
    await settled(page);
    expect(await announcement(page, 5000)).toBe('Done already.');
    await page.context().close();
  });
});
