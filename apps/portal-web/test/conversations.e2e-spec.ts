import { ApiClient } from '@portal/testing';
import {
  answerTexts,
  AGENT,
  conversationId,
  DESKTOP,
  KEY,
  newConversation,
  screenshot,
  send,
  settled,
  useWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(120_000);

let web: WebHarness;
let api: ApiClient;
useWebHarness((started) => {
  web = started;
  api = new ApiClient(web.portal.baseURL, KEY);
});

const conversationIds = async (): Promise<string[]> =>
  ((await api.get('/v1/conversations')).body as { id: string }[]).map((c) => c.id);

describe('the portal web client, conversations', () => {
  it('creates a conversation with its first message, never an empty one', async () => {
    const page = await web.signedInPage();
    const before = await conversationIds();
    await newConversation(page);
    await newConversation(page); // clicked twice: still nothing created
    expect(await conversationIds()).toEqual(before);
    web.script('First answer.');
    await send(page, 'The first message');
    const id = await conversationId(page);
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['First answer.'])).toEqual(['First answer.']);
    expect(await conversationIds()).toEqual([id, ...before]);
    await page.context().close();
  });

  it('keeps a draft per conversation, with its uploaded files, across switching and reloading', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script('One.');
    await send(page, 'Conversation one');
    const first = await conversationId(page);
    await settled(page);
    const field = page.getByLabel('Message');
    await field.fill('Half-written thought about the report');
    await page.getByLabel('Attach files').setInputFiles({
      name: 'notes.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('# Notes\n\nSome notes.'),
    });
    await page.locator('.tray-item[data-status="finished"]').waitFor();

    // Another conversation not started yet has its own (empty) draft, kept too.
    await newConversation(page);
    expect(await field.inputValue()).toBe('');
    await field.fill('A new idea');
    await page.goto(`${web.portal.baseURL}/c/${first}`);
    await settled(page);
    expect(
      await until(
        () => field.inputValue(),
        (v) => v !== '',
      ),
    ).toBe('Half-written thought about the report');
    await page.locator('.tray-item .tray-name', { hasText: 'notes.md' }).waitFor();
    await page.reload();
    await settled(page);
    expect(
      await until(
        () => field.inputValue(),
        (v) => v !== '',
      ),
    ).toBe('Half-written thought about the report');
    await page.locator('.tray-item[data-status="finished"] .tray-name', { hasText: 'notes.md' }).waitFor();
    await newConversation(page);
    expect(
      await until(
        () => field.inputValue(),
        (v) => v !== '',
      ),
    ).toBe('A new idea');

    // Sent, the draft is gone.
    await page.goto(`${web.portal.baseURL}/c/${first}`);
    await settled(page);
    web.script('Noted.');
    await page.getByRole('button', { name: 'Send' }).click();
    await eventually(() => answerTexts(page), ['One.', 'Noted.']);
    await page.reload();
    await settled(page);
    expect(await field.inputValue()).toBe('');
    expect(await page.locator('.tray-item').count()).toBe(0);
    await page.context().close();
  });

  it('renames, searches and deletes conversations, grouped by date', async () => {
    const page = await web.signedInPage();
    const list = page.getByRole('navigation', { name: 'Conversations' });
    for (const [text, answer] of [
      ['Kế hoạch du lịch Đà Nẵng', 'Đi biển Mỹ Khê.'],
      ['Quarterly revenue figures', 'Revenue was up.'],
    ]) {
      await newConversation(page);
      web.script(answer);
      await send(page, text);
      await settled(page);
    }
    const id = await conversationId(page);
    const item = (name: string | RegExp) => list.getByRole('listitem').filter({ hasText: name });
    await list.getByRole('heading', { name: 'Today' }).waitFor();

    // Rename the open one: the list and the heading follow.
    const open = list.getByRole('listitem').filter({ has: page.locator('a[aria-current="page"]') });
    await open.getByRole('button', { name: 'Rename' }).click();
    const field = list.getByRole('textbox', { name: /^New title of/ });
    await field.fill('Doanh thu quý 3');
    await field.press('Enter');
    await item('Doanh thu quý 3').waitFor();
    expect(
      await until(
        () => page.locator('.conversation-head h1').textContent(),
        (t) => t === 'Doanh thu quý 3',
      ),
    ).toBe('Doanh thu quý 3');
    expect((await api.get(`/v1/conversations/${id}`)).body.title).toBe('Doanh thu quý 3');

    // Search by message text, Vietnamese included, with a snippet of where it was found.
    const search = page.getByLabel('Search conversations');
    await search.fill('Đà Nẵng');
    expect(
      await until(
        () => list.locator('.title').allTextContents(),
        (t) => t.length === 1,
      ),
    ).toHaveLength(1);
    expect(await list.locator('.snippet').first().textContent()).toMatch(/Đà Nẵng/);
    await search.fill('');
    await item('Doanh thu quý 3').waitFor();

    // Delete the open one: it leaves the list, the screen and the API.
    page.once('dialog', (dialog) => void dialog.accept());
    await item('Doanh thu quý 3').getByRole('button', { name: 'Delete' }).click();
    await item('Doanh thu quý 3').waitFor({ state: 'detached' });
    expect(new URL(page.url()).pathname).toBe('/');
    expect((await api.get(`/v1/conversations/${id}`)).status).toBe(404);
    await screenshot(page, 'list');
    await page.context().close();
  });

  it('speaks Vietnamese to a Vietnamese browser, and English once switched', async () => {
    const context = await web.browser.newContext({ viewport: DESKTOP, locale: 'vi-VN' });
    const page = await context.newPage();
    await page.goto(web.portal.baseURL + '/');
    await page.getByLabel('Khóa API').fill(KEY);
    await page.getByRole('button', { name: 'Đăng nhập', exact: true }).click();
    await page.getByRole('button', { name: 'Cuộc trò chuyện mới' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('vi');
    await page.getByLabel('Trợ lý').selectOption(AGENT);
    await page.getByRole('button', { name: 'Cuộc trò chuyện mới' }).click();
    web.script('Chào bạn.');
    await page.getByLabel('Tin nhắn').fill('Xin chào');
    await page.getByRole('button', { name: 'Gửi' }).click();
    await settled(page);
    await page.getByRole('button', { name: 'Sao chép' }).first().waitFor();
    await screenshot(page, 'vi');
    await page.getByLabel('Ngôn ngữ').selectOption('en');
    await page.getByRole('button', { name: 'Send' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en');
    expect(await page.getByRole('button', { name: 'Copy', exact: true }).count()).toBe(2);
    await context.close();
  });
});
