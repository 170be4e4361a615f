import { startTestIdp, type TestIdp } from '@portal/testing/oidc';
import {
  answerTexts,
  newConversation,
  send,
  settled,
  startWebHarness,
  type WebHarness,
} from './web-harness.util';

jest.setTimeout(90_000);

let idp: TestIdp;
let web: WebHarness;
beforeAll(async () => {
  idp = await startTestIdp();
  web = await startWebHarness({ idp });
});
afterAll(async () => {
  await web?.close();
  await idp?.close();
});

describe('the portal web client, signing in through the identity provider', () => {
  it('signs in with the provider, talks to the agent over the cookie, and signs out', async () => {
    const context = await web.browser.newContext({ viewport: { width: 1200, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(web.portal.baseURL + '/');
      // The API key field stays for developers, beside the provider's button.
      await page.getByLabel('API key').waitFor();
      idp.signInAs({ sub: 'zoe', claims: { name: 'Zoe Park', portal_role: 'author' } });
      await page.getByRole('button', { name: 'Sign in with Acme' }).click();

      await page.getByRole('button', { name: 'New conversation' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/');
      await page.getByText('Zoe Park · acme').waitFor();
      expect(await page.evaluate(() => localStorage.getItem('portal.apiKey'))).toBeNull();
      const [session] = (await context.cookies()).filter((c) => c.name === 'portal_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });

      // A conversation, a message and its streamed answer: POSTs with X-Portal-CSRF, the stream with the cookie.
      await newConversation(page);
      web.script('Hello, Zoe.');
      await send(page, 'Hi');
      await settled(page);
      expect(await answerTexts(page)).toEqual(['Hello, Zoe.']);

      await page.reload();
      await page.getByLabel('Message').waitFor();

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: 'Sign in with Acme' }).waitFor();
      await page.reload();
      await page.getByRole('button', { name: 'Sign in with Acme' }).waitFor();
      const me = await page.evaluate(async () => (await fetch('/v1/me')).status);
      expect(me).toBe(401);
    } finally {
      await context.close();
    }
  });
});
