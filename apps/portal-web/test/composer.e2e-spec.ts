import sharp from 'sharp';
import { ApiClient } from '@portal/testing';
import {
  answerTexts,
  conversationId,
  KEY,
  newConversation,
  SEEING_AGENT,
  send,
  settled,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(90_000);

let web: WebHarness;
useWebHarness((started) => (web = started));

describe('the portal web client, composer', () => {
  it('completes a /slug from the catalogue with the keyboard, and sends it as typed', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const field = page.getByLabel('Message');
    await field.fill('/fa');
    const option = page.getByRole('option', { name: /\/fact-check/ });
    await option.waitFor();
    expect(await option.getAttribute('aria-selected')).toBe('true');
    await field.press('Enter');
    expect(await field.inputValue()).toBe('/fact-check ');
    await page.getByRole('listbox').waitFor({ state: 'hidden' });

    // `/co` offers the compaction command too.
    await field.fill('/co');
    await page.getByRole('option', { name: /\/compact/ }).waitFor();
    await field.press('Escape');
    await page.getByRole('listbox').waitFor({ state: 'hidden' });

    web.script('Checked.');
    await field.fill('/fact-check is the sky blue?');
    await field.press('Enter');
    await settled(page);
    const user = page.locator('article[data-role="user"]');
    expect(await user.textContent()).toBe('/fact-check is the sky blue?');
    expect(await user.locator('.chip').allTextContents()).toEqual(['/fact-check']);
    expect(await eventually(() => answerTexts(page), ['Checked.'])).toEqual(['Checked.']);
    await page.context().close();
  });

  it("sends an effort override with one message only, and a reopened conversation shows each turn's level", async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const effort = page.getByLabel('Effort');
    expect(await effort.inputValue()).toBe('medium'); // the agent's
    await effort.selectOption('high');
    web.script('Thought hard.');
    await send(page, 'Think hard');
    const id = await conversationId(page);
    // The override was for that message: the menu is back at the agent's level.
    expect(
      await until(
        () => effort.inputValue(),
        (v) => v === 'medium',
      ),
    ).toBe('medium');
    await eventually(() => answerTexts(page), ['Thought hard.']);
    web.script('Quick one.');
    await send(page, 'Now be quick');
    await eventually(() => answerTexts(page), ['Thought hard.', 'Quick one.']);

    const api = new ApiClient(web.portal.baseURL, KEY);
    const { body: conversation } = await api.get(`/v1/conversations/${id}`);
    expect(conversation.turns.map((t: { effort: string }) => t.effort)).toEqual(['high', 'medium']);
    const sentEffort = (text: string) =>
      web.model.requests.find((r) => JSON.stringify(r.body?.messages ?? '').includes(text))?.body
        ?.reasoning_effort;
    expect([sentEffort('Think hard'), sentEffort('Now be quick')]).toEqual(['high', 'medium']);

    // Each turn's recorded level, on the message that opened it, live and after a reload.
    const labels = page.locator('.turn-effort');
    const shown = () =>
      labels.evaluateAll((els) =>
        els.map((el) => [el.previousElementSibling?.getAttribute('data-turn-id'), el.textContent]),
      );
    const expected = conversation.turns.map((t: { id: string; effort: string }) => [
      t.id,
      `Effort: ${t.effort}`,
    ]);
    expect(await eventually(shown, expected)).toEqual(expected);
    await page.reload();
    await page.getByLabel('Message').waitFor();
    expect(await page.getByLabel('Effort').inputValue()).toBe('medium');
    expect(await eventually(shown, expected)).toEqual(expected);
    await page.context().close();
  });

  it('uploads a document and shows its live status, headings and the attachment on the message', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const doc = [
      '# Annual report',
      '',
      'Intro text.',
      '',
      '## Revenue',
      '',
      'Q3 revenue was $4.2M.',
      '',
      '## Costs',
      '',
      'Flat.',
    ].join('\n');
    await page
      .getByLabel('Attach files')
      .setInputFiles({ name: 'report.md', mimeType: 'text/markdown', buffer: Buffer.from(doc) });
    const item = page.locator('.tray-item');
    await item.locator('.tray-name', { hasText: 'report.md' }).waitFor();
    expect(
      await until(
        () => item.getAttribute('data-status'),
        (s) => s === 'finished' || s === 'failed',
      ),
    ).toBe('finished');
    await item.locator('summary').click();
    expect(await item.locator('.tray-headings li').allTextContents()).toEqual([
      'Annual report',
      'Revenue',
      'Costs',
    ]);

    web.script('The report says $4.2M.');
    await send(page, 'What does the report say?');
    await settled(page);
    await page.locator('.tray-item').waitFor({ state: 'detached' });
    const chip = page.locator('article[data-role="user"] .attachment-chip');
    expect(
      await until(
        () => chip.textContent(),
        (t) => !!t?.includes('report.md'),
      ),
    ).toContain('report.md');
    const call = web.model.requests.find((r) =>
      JSON.stringify(r.body?.messages ?? '').includes('What does the report say?'),
    );
    expect(JSON.stringify(call?.body?.messages)).toContain('Q3 revenue was $4.2M.');
    await page.context().close();
  });

  it('steers a running turn: the message joins it instead of opening a new one', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(
      { text: 'Working on the first part. '.repeat(8), chunkSize: 3, delayMs: 60 },
      'Shorter, as asked.',
    );
    await send(page, 'Explain at length');
    await page.getByRole('button', { name: 'Cancel' }).waitFor();
    await page.locator('[data-block-kind="text"].live').waitFor();
    await send(page, 'keep it short');
    const steering = page.locator('[data-block-kind="text"][data-steering]');
    await steering.waitFor();
    expect(await steering.textContent()).toBe('keep it short');
    await settled(page);
    expect(
      await until(
        () => answerTexts(page),
        (t) => t.at(-1) === 'Shorter, as asked.',
      ),
    ).toContain('Shorter, as asked.');
    const api = new ApiClient(web.portal.baseURL, KEY);
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    const { body } = await api.get(`/v1/conversations/${id}`);
    expect(body.turns).toHaveLength(1);
    await page.context().close();
  });

  it('keeps what is typed while a message is on its way, and refuses it as /compact while the turn runs', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    // Started first: the conversation's stream is open when the held message's turn opens.
    web.script('Ready.');
    await send(page, 'Start');
    await settled(page);
    // Long enough (about 25 s) to be still running when /compact is sent on a loaded machine; the
    // test cancels it at the end.
    web.script({ text: 'A slow answer. '.repeat(80), chunkSize: 3, delayMs: 60 });
    // The gateway's answer to the POST is held back: the turn opens over SSE before it arrives.
    let answered!: () => void;
    const held = new Promise<void>((resolve) => (answered = resolve));
    await page.route('**/v1/conversations/*/messages', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      const response = await route.fetch();
      await held;
      await route.fulfill({ response });
    });
    await send(page, 'Talk for a while');
    await page.getByRole('button', { name: 'Cancel' }).waitFor();
    const field = page.getByLabel('Message');
    const sendButton = page.getByRole('button', { name: 'Send' });
    await field.fill('/compact');
    expect(await sendButton.isEnabled()).toBe(false);
    answered();
    expect(await until(() => sendButton.isEnabled(), Boolean)).toBe(true);
    expect(await field.inputValue()).toBe('/compact');
    await sendButton.click();
    expect(
      await until(
        () => page.locator('.composer-notice').textContent(),
        (t) => !!t,
      ),
    ).toMatch(/running.*\/compact/i);
    expect(await field.inputValue()).toBe('/compact');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Cancel' }).waitFor({ state: 'hidden' });
    await page.context().close();
  });

  it('finds a skill by any part of its slug, and sends /compact typed in full on Enter', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script('Hello.');
    await send(page, 'Hello');
    await settled(page);
    const field = page.getByLabel('Message');
    await field.fill('/check');
    await page.getByRole('option', { name: /\/fact-check/ }).waitFor();
    await field.press('Escape');

    web.summaryPace = { chunkSize: 8, delayMs: 10 };
    await field.fill('/compact');
    await page.getByRole('option', { name: /\/compact/ }).waitFor();
    await field.press('Enter');
    await page.getByRole('separator', { name: 'Context summarised' }).waitFor({ timeout: 30_000 });
    expect(await field.inputValue()).toBe('');
    await page.context().close();
  });

  it('takes its refusal back once the cause is gone', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script({ text: 'A slow answer. '.repeat(10), chunkSize: 3, delayMs: 40 });
    await send(page, 'Go');
    await page.getByRole('button', { name: 'Cancel' }).waitFor();
    await send(page, '/compact');
    const notice = page.locator('.composer-notice');
    expect(
      await until(
        () => notice.textContent(),
        (t) => !!t,
      ),
    ).toMatch(/running/);
    await settled(page);
    expect(
      await until(
        () => notice.textContent(),
        (t) => t === '',
      ),
    ).toBe('');
    await page.context().close();
  });

  it('attaches dropped and pasted files, refuses a picture the model cannot see at once, and never drops a failed upload', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const tray = page.locator('.tray-item');
    // Dropped on the composer.
    await page.locator('form.composer').evaluate((form) => {
      const data = new DataTransfer();
      data.items.add(new File(['# Dropped\n\nText.'], 'dropped.md', { type: 'text/markdown' }));
      form.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await tray.filter({ hasText: 'dropped.md' }).and(page.locator('[data-status="finished"]')).waitFor();
    // Pasted into the field.
    await page.getByLabel('Message').evaluate((field) => {
      const data = new DataTransfer();
      data.items.add(new File(['a,b\n1,2\n'], 'pasted.csv', { type: 'text/csv' }));
      field.dispatchEvent(
        new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }),
      );
    });
    await tray.filter({ hasText: 'pasted.csv' }).and(page.locator('[data-status="finished"]')).waitFor();

    // The model cannot see: a picture is refused as it is attached, with nothing uploaded.
    const uploads = web.portal.baseURL; // the page's requests are counted below
    const posted: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().startsWith(`${uploads}/v1/attachments`)) posted.push(r.url());
    });
    await page.getByLabel('Attach files').setInputFiles({
      name: 'photo.png',
      mimeType: 'image/png',
      buffer: Buffer.from('89504e470d0a1a0a', 'hex'),
    });
    const picture = tray.filter({ hasText: 'photo.png' });
    expect(await picture.locator('[role="alert"]').textContent()).toBe(
      'fake cannot see pictures: remove photo.png, or start a conversation with an agent whose model can.',
    );
    expect(posted).toEqual([]);
    await send(page, 'Read these');
    const notice = page.locator('.composer-notice');
    expect(
      await until(
        () => notice.textContent(),
        (t) => !!t,
      ),
    ).toContain('fake cannot see pictures');
    await picture.getByRole('button', { name: 'Remove photo.png' }).click();

    // A file the portal refuses stays in the tray, saying why, and Send says it too.
    await page.getByLabel('Attach files').setInputFiles({
      name: 'blob.bin',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from([0, 159, 146, 150, 0, 1, 2, 3, 254, 255]),
    });
    const failed = tray.filter({ hasText: 'blob.bin' });
    expect(
      await until(
        () =>
          failed
            .locator('[role="alert"]')
            .textContent()
            .catch(() => ''),
        (t) => !!t,
      ),
    ).toMatch(/^blob\.bin did not upload: remove it, or attach it again\./);
    await send(page, 'Read these');
    expect(
      await until(
        () => notice.textContent(),
        (t) => !!t?.includes('blob.bin'),
      ),
    ).toMatch(/blob\.bin did not upload/);
    expect(await page.locator('article').count()).toBe(0);
    await failed.getByRole('button', { name: 'Remove blob.bin' }).click();
    web.script('Two files read.');
    await send(page, 'Read these');
    await settled(page);
    const chips = page.locator('article[data-role="user"] .attachment-chip');
    expect(
      await until(
        () => chips.allTextContents(),
        (t) => t.length === 2 && t.every((c) => c.includes('·')),
      ),
    ).toEqual(['dropped.md · document', 'pasted.csv · document']);
    await page.context().close();
  });

  it('shows a thumbnail of a picture in the tray and on the message, for a model that can see', async () => {
    const page = await web.signedInPage();
    await newConversation(page, SEEING_AGENT);
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c33' } })
      .png()
      .toBuffer();
    await page
      .getByLabel('Attach files')
      .setInputFiles({ name: 'red.png', mimeType: 'image/png', buffer: png });
    const thumb = page.locator('.tray-item img.thumbnail');
    await thumb.waitFor();
    expect(await thumb.getAttribute('alt')).toBe('Picture red.png');
    expect(
      await until(
        () => thumb.evaluate((img: HTMLImageElement) => img.naturalWidth),
        (w) => w > 0,
      ),
    ).toBe(64);
    web.script('A red rectangle.');
    await send(page, 'What is this?');
    await settled(page);
    const onMessage = page.locator('article[data-role="user"] img.thumbnail');
    await onMessage.waitFor();
    expect(
      await until(
        () => onMessage.evaluate((img: HTMLImageElement) => img.naturalHeight),
        (h) => h > 0,
      ),
    ).toBe(48);
    await page.context().close();
  });

  it('works from the keyboard alone: sign in, new conversation, send', async () => {
    const context = await web.browser.newContext();
    const page = await context.newPage();
    await page.goto(web.portal.baseURL + '/');
    await page.getByLabel('API key').waitFor();
    await page.keyboard.type(KEY); // the field has the focus
    await page.keyboard.press('Enter');
    const agent = page.getByLabel('Agent');
    await agent.locator('option').first().waitFor({ state: 'attached' }); // the agents have loaded
    await agent.focus();
    await page.keyboard.press('Tab'); // to "New conversation"
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/\?agent=/);
    await page.getByLabel('Message').waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-autocomplete'))).toBe('list');
    web.script('Hello, keyboard.');
    await page.keyboard.type('Hi');
    await page.keyboard.press('Enter');
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Hello, keyboard.'])).toEqual(['Hello, keyboard.']);
    await context.close();
  });
});
