import {
  answerTexts,
  newConversation,
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

describe('the portal web client, requests', () => {
  it('asks for approval; Approve with a note runs the tool and the turn goes on', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(
      { text: 'Deploying now.', toolCalls: [{ name: 'deploy', arguments: { env: 'prod' } }] },
      'Deployed to prod.',
    );
    await send(page, 'Deploy the site');

    const request = page.locator('[data-block-kind="approval_request"]');
    await request.getByRole('button', { name: 'Approve' }).waitFor();
    await request.getByLabel('Note (optional)').fill('go ahead');
    await request.getByRole('button', { name: 'Approve' }).click();

    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Deployed to prod.'])).toEqual(['Deployed to prod.']);
    expect(await request.locator('.request-answer').textContent()).toBe('Approved — go ahead');
    expect(await request.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(web.deployCalls).toEqual([{ env: 'prod' }]);
    expect(await page.locator('[data-block-kind="tool_result"]').getAttribute('data-outcome')).toBe('ok');
    await page.context().close();
  });

  it('Deny records a denied result; the tool never runs', async () => {
    const calls = web.deployCalls.length;
    const page = await web.signedInPage();
    await newConversation(page);
    web.script({ toolCalls: [{ name: 'deploy', arguments: { env: 'staging' } }] }, 'I did not deploy.');
    await send(page, 'Deploy staging');
    const deny = page.getByRole('button', { name: 'Deny' });
    await deny.waitFor();
    // Keyboard only: focus the button and press Enter.
    await deny.focus();
    await page.keyboard.press('Enter');
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['I did not deploy.'])).toEqual(['I did not deploy.']);
    expect(await page.locator('[data-block-kind="approval_request"] .request-answer').textContent()).toBe(
      'Denied',
    );
    expect(await page.locator('[data-block-kind="tool_result"]').getAttribute('data-outcome')).toBe('denied');
    expect(web.deployCalls.length).toBe(calls);
    await page.context().close();
  });

  it("offers the agent's MCP tools and shows an MCP call's name and arguments on the approval card", async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    const mark = web.model.requests.length;
    web.script({ toolCalls: [{ name: 'tickets__delete_ticket', arguments: { id: 'T-9' } }] }, 'Deleted T-9.');
    await send(page, 'Delete ticket T-9');

    const request = page.locator('[data-block-kind="approval_request"]');
    await request.getByRole('button', { name: 'Approve' }).waitFor();
    expect(await request.locator('.tool-name').textContent()).toBe('tickets__delete_ticket');
    expect(await request.locator('.tool-args').textContent()).toBe('{\n  "id": "T-9"\n}');
    expect(web.mcp.calls).toEqual([]);
    const offered = web.model.requests
      .slice(mark)
      .flatMap((r) =>
        ((r.body?.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name),
      );
    expect(offered).toEqual(expect.arrayContaining(['tickets__lookup', 'tickets__delete_ticket']));
    expect(offered).not.toContain('tickets__admin_reset');

    await request.getByRole('button', { name: 'Approve' }).click();
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Deleted T-9.'])).toEqual(['Deleted T-9.']);
    expect(web.mcp.calls.map((c) => [c.tool, c.args])).toEqual([['delete_ticket', { id: 'T-9' }]]);
    expect(await page.locator('[data-block-kind="tool_result"]').getAttribute('data-outcome')).toBe('ok');
    await page.context().close();
  });

  it('answers a clarification with one of its options, or in its own words', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(
      {
        toolCalls: [
          { name: 'ask_clarification', arguments: { question: 'Which region?', options: ['EU', 'US'] } },
        ],
      },
      'Going with EU.',
    );
    await send(page, 'Set up the region');
    const request = page.locator('[data-block-kind="clarification_request"]');
    await request.getByRole('button', { name: 'EU' }).click();
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Going with EU.'])).toEqual(['Going with EU.']);
    expect(await request.locator('.request-answer').textContent()).toBe('Answered: EU');

    web.script(
      { toolCalls: [{ name: 'ask_clarification', arguments: { question: 'Which city?' } }] },
      'Hà Nội it is.',
    );
    await send(page, 'And the city?');
    const second = page.locator('[data-block-kind="clarification_request"]').nth(1);
    await second.getByLabel('Your answer').fill('Hà Nội');
    await second.getByLabel('Your answer').press('Enter');
    await second.locator('.request-answer').waitFor();
    await settled(page);
    expect(await eventually(() => answerTexts(page), ['Going with EU.', 'Hà Nội it is.'])).toEqual([
      'Going with EU.',
      'Hà Nội it is.',
    ]);
    expect(await second.locator('.request-answer').textContent()).toBe('Answered: Hà Nội');
    await page.context().close();
  });

  it('refuses a plain message while the turn waits for an answer, and says why', async () => {
    const page = await web.signedInPage();
    await newConversation(page);
    web.script(
      { toolCalls: [{ name: 'ask_clarification', arguments: { question: 'Sure?', options: ['Yes'] } }] },
      'Done.',
    );
    await send(page, 'Do it');
    await page.getByRole('button', { name: 'Yes' }).waitFor();
    await send(page, 'never mind');
    const notice = page.locator('.composer-notice');
    expect(
      await until(
        () => notice.textContent(),
        (t) => !!t,
      ),
    ).toMatch(/waiting for your answer/);
    expect(await page.locator('article[data-role="user"]').count()).toBe(1);
    await page.getByRole('button', { name: 'Yes' }).click();
    await settled(page);
    await page.context().close();
  });
});
