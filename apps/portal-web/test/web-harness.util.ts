import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  startFakeOpenAI,
  startMcpTestServer,
  startPortal,
  type FakeAnswer,
  type FakeOpenAI,
  type FakeRequest,
  type FakeScript,
  type McpTestServer,
  type RunningPortal,
} from '@portal/testing';
import type { TestIdp } from '@portal/testing/oidc';
import { titlePrompt } from '@portal/prompt';

/** Debian's Chromium, never a downloaded browser. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const KEY = 'pk_web_ann_author';
/** A desktop screen, and a phone's (390 px wide) with and without its keyboard open. */
export const DESKTOP = { width: 1200, height: 900 };
export const PHONE = { width: 390, height: 844 };
export const PHONE_KEYBOARD = { width: 390, height: 440 };
export type Viewport = { width: number; height: number };
export const AGENT = 'helper';
/** An agent on a model with a small context window: a long answer makes the next turn compact. */
export const SMALL_AGENT = 'small';
/** An agent on a model that can see pictures. */
export const SEEING_AGENT = 'seer';

export interface WebHarness {
  portal: RunningPortal;
  model: FakeOpenAI;
  browser: Browser;
  /** Calls the HTTP tool `deploy` received. */
  deployCalls: unknown[];
  /** The MCP server `tickets` of the agent (`lookup`, and `delete_ticket`, which needs approval). */
  mcp: McpTestServer;
  /** Queues the answers of the agent's next model calls (title and summary calls are answered apart). */
  script(...answers: FakeScript[]): void;
  /** How the compaction summary streams (slow, so that "Summarising conversation" can be seen). */
  summaryPace: { chunkSize: number; delayMs: number };
  /** A fresh page, signed in through the form; at a desktop width unless told (a phone: 390). */
  signedInPage(viewport?: Viewport): Promise<Page>;
  close(): Promise<void>;
}

/** The title call's closing request, as the portal words it. */
const TITLE_REQUEST = titlePrompt({ request: '', answer: '' }).at(-1)!.content;

/** The side calls of the portal: the title of a conversation, and the compaction summary. */
function sideCall(request: FakeRequest, pace: WebHarness['summaryPace']): FakeScript | null {
  const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
  const text = messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
  const last = text.at(-1) ?? '';
  if (last === TITLE_REQUEST) return 'Web client test';
  if (last.startsWith('Write the summary now')) {
    const heading = /"([^"]+)"/.exec(last)?.[1] ?? 'Summary of turns 1–1';
    return {
      text: `${heading}\n\n## Requests\n- "Xin chào"\n\n## Facts\n- Revenue was $4.2M (ref:tr_feedbeef).`,
      ...pace,
    };
  }
  return null;
}

/**
 * The whole portal (built services as processes, `startPortal`) on a fake model, an HTTP tool that
 * needs approval, and a headless Chromium.
 */
/** `test-artifacts/portal-web/<test name>.png` (not committed; CI keeps it as an artifact). */
async function saveScreenshot(page: Page, name: string): Promise<void> {
  const root = path.resolve(__dirname, '..', '..', '..');
  const file = path.join(root, 'test-artifacts', 'portal-web', `${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
  mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
}

/**
 * The file's harness: started before its tests (handed to `started`), closed after them.
 * Register it at the top of a spec, as its `beforeAll`/`afterAll`.
 */
export function useWebHarness(started: (web: WebHarness) => void, opts: { idp?: TestIdp } = {}): void {
  let web: WebHarness | undefined;
  beforeAll(async () => {
    web = await startWebHarness(opts);
    started(web);
  });
  afterAll(async () => {
    await web?.close();
  });
}

/** `idp`: acme (named "Acme") signs its people in through it, as client `portal-web` with the role claim `portal_role`. */
export async function startWebHarness(opts: { idp?: TestIdp } = {}): Promise<WebHarness> {
  // The bundle is cheap to build and must match the sources under test.
  const root = path.resolve(__dirname, '..', '..', '..');
  execFileSync(process.execPath, [path.join(root, 'tools', 'build-web.js')], { cwd: root, stdio: 'ignore' });

  const deployCalls: unknown[] = [];
  const tools: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      deployCalls.push(body ? JSON.parse(body) : null);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ deployed: true }));
    });
  });
  await new Promise<void>((resolve) => tools.listen(0, '127.0.0.1', resolve));
  const toolURL = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  const mcp = await startMcpTestServer();

  const queue: FakeScript[] = [];
  const pace = { chunkSize: 8, delayMs: 10 };
  const model = await startFakeOpenAI({
    defaultResponder: (request) => sideCall(request, pace) ?? queue.shift() ?? 'Fake answer.',
  });
  const portal = await startPortal({
    models: {
      models: [
        {
          id: 'fake',
          baseURL: model.baseURL,
          contextWindow: 128000,
          reasoning: true,
          price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
        },
        {
          id: 'fake-eyes',
          model: 'fake',
          baseURL: model.baseURL,
          contextWindow: 128000,
          vision: { maxLongSide: 2048, maxShortSide: 768 },
          reasoning: false,
          price: { inputPerMTok: 1, outputPerMTok: 2 },
        },
        {
          id: 'fake-small',
          model: 'fake',
          baseURL: model.baseURL,
          contextWindow: 6000,
          reasoning: false,
          price: { inputPerMTok: 1, outputPerMTok: 2 },
        },
      ],
    },
    bootstrap: {
      orgs: [
        {
          id: 'acme',
          name: 'Acme',
          ...(opts.idp && {
            oidc: { issuer: opts.idp.issuer, clientId: 'portal-web', roleClaim: 'portal_role' },
          }),
          users: [{ id: 'ann', role: 'author', apiKey: KEY }],
          skills: [
            {
              slug: 'fact-check',
              name: 'Fact check',
              description: 'Check every claim against sources.',
              instructions: 'Check every claim.',
              visibility: 'org',
              status: 'active',
              published: true,
              owner: 'ann',
            },
          ],
          agents: [
            {
              id: AGENT,
              name: 'Helper',
              instructions: 'Help.',
              model: 'fake',
              effort: 'medium',
              skills: ['fact-check'],
              tools: [
                {
                  name: 'deploy',
                  description: 'Deploys the site.',
                  parameters: { type: 'object', properties: { env: { type: 'string' } } },
                  url: `${toolURL}/deploy`,
                  requiresApproval: true,
                },
              ],
              mcpServers: [
                {
                  name: 'tickets',
                  url: mcp.url,
                  tools: ['lookup', 'delete_ticket'],
                  requiresApproval: ['delete_ticket'],
                },
              ],
            },
            {
              id: SEEING_AGENT,
              name: 'Seer',
              instructions: 'Look.',
              model: 'fake-eyes',
              effort: 'low',
              skills: [],
              tools: [],
            },
            {
              id: SMALL_AGENT,
              name: 'Small',
              instructions: 'Help briefly.',
              model: 'fake-small',
              effort: 'low',
              skills: [],
              tools: [],
            },
          ],
        },
      ],
    },
    env: { PORTAL_TOOL_URL_ALLOW: `${toolURL}/,${mcp.url}` },
  });
  opts.idp?.addClient({
    clientId: 'portal-web',
    redirectUris: [`${portal.baseURL}/v1/auth/oidc/acme/callback`],
  });
  // A browser that cannot start must not leave the portal's processes running behind the failed test.
  const browser = await chromium
    .launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
    .catch(async (err: unknown) => {
      await portal.stop();
      await model.close();
      await mcp.close();
      await new Promise((resolve) => tools.close(resolve));
      throw err;
    });

  return {
    portal,
    model,
    browser,
    deployCalls,
    mcp,
    script: (...answers) => void queue.push(...answers),
    get summaryPace() {
      return pace;
    },
    set summaryPace(value) {
      Object.assign(pace, value);
    },
    async signedInPage(viewport = DESKTOP) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      // Each test closes its context at its end: keep what the screen showed then, as a test artifact.
      const close = context.close.bind(context);
      context.close = async (options) => {
        await saveScreenshot(page, expect.getState().currentTestName ?? 'page');
        return close(options);
      };
      await page.goto(portal.baseURL + '/');
      await page.getByLabel('API key').fill(KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      return page;
    },
    async close() {
      await browser?.close();
      await portal?.stop();
      await model?.close();
      await mcp.close();
      await new Promise((resolve) => tools.close(resolve));
    },
  };
}

/**
 * Opens a new conversation with the agent from the form: the composer alone, since the
 * conversation is created by its first message. On a phone the form is in the drawer.
 */
export async function newConversation(page: Page, agent = AGENT): Promise<void> {
  const toggle = page.getByRole('button', { name: 'Conversations' });
  if (await toggle.isVisible()) await toggle.click();
  await page.getByLabel('Agent').selectOption(agent);
  await page.getByRole('button', { name: 'New conversation' }).click();
  await page.waitForURL(/\/\?agent=/);
  await page.getByLabel('Message').waitFor();
}

/** The open conversation's id, once its first message created it (from the URL). */
export async function conversationId(page: Page): Promise<string> {
  await page.waitForURL(/\/c\/[^/]+$/);
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core run in the page (evaluated, so the page's CSP does not apply): the serious and critical findings. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  const source = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  // Contrast is judged on the settled screen: a word fading in (from 15 % opacity) would fail it.
  await page.evaluate(() =>
    Promise.all(
      document
        .getAnimations()
        .filter((a) => Number.isFinite(a.effect?.getComputedTiming().endTime ?? Infinity))
        .map((a) => a.finished.catch(() => undefined)),
    ),
  );
  await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      nodes: nodes.map((n) => ({ target: n.target })),
    }));
}

/** Keeps what the screen shows now as a test artifact, under `test-artifacts/portal-web/`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await saveScreenshot(page, `${expect.getState().currentTestName ?? 'page'} ${name}`);
}

export async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** A slow stream: `text` in pieces of `chunkSize` code points, `delayMs` apart. */
export function slow(text: string, chunkSize = 3, delayMs = 40, extra: Partial<FakeAnswer> = {}): FakeAnswer {
  return { text, chunkSize, delayMs, ...extra };
}

/** The text of every assistant text block that is the answer (not narration), in order. */
export function answerTexts(page: Page): Promise<string[]> {
  return page
    .locator('article[data-role="assistant"] [data-block-kind="text"]:not([data-narration])')
    .allTextContents();
}

/** Resolves once no text block plays out any more (settled, plain text). */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      document.querySelector('article[data-role="assistant"] [data-block-kind="text"]') !== null &&
      document.querySelector('.live, [aria-busy="true"]') === null &&
      document.querySelector('.thinking-indicator') === null,
  );
}

/**
 * Reads `read()` until `ok` holds (or the time is up) and returns the last value read, for a plain
 * `expect` to judge: jest's expect has no waiting matchers of its own.
 */
export async function until<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

/** What the live region says, once it says anything (empty if it stays silent for `timeoutMs`). */
export function announcement(page: Page, timeoutMs = 20_000): Promise<string | null> {
  return until(
    () => page.locator('#announcer').textContent(),
    (t) => !!t,
    timeoutMs,
  );
}

/** Reads until the value equals `expected` (as JSON), then returns the last value read. */
export function eventually<T>(read: () => Promise<T>, expected: T, timeoutMs = 20_000): Promise<T> {
  const want = JSON.stringify(expected);
  return until(read, (value) => JSON.stringify(value) === want, timeoutMs);
}
