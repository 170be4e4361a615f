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
  startWebHarness,
  until,
  eventually,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(120_000);

let web: WebHarness;
let api: ApiClient;
beforeAll(async () => {
  web = await startWebHarness();
  api = new ApiClient(web.portal.baseURL, KEY);
});
afterAll(async () => {
  await web?.close();
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
