import { ConversationRepository, SkillRepository, TurnLeaseRepository } from '@portal/dal';
import { checkTurn, ConversationId, TurnId } from '@portal/domain';
import { fakeError } from '@portal/testing';
import { addSkill, ORG, skill, startHarness, transcriptOf, type Harness } from '../../test/turn.harness';

let h: Harness;
let factCheck: string;

beforeAll(async () => {
  h = await startHarness({ env: { PORTAL_LIMIT_MAX_CALLS_PER_TURN: '3' } });
  factCheck = await addSkill(h, skill('fact-check'));
});
afterAll(async () => {
  await h.close();
});

const toolCall = (name: string, args: Record<string, unknown> | string = {}) => ({ name, arguments: args });

async function expectValid(turnId: string) {
  const turn = (await h.turn(turnId))!;
  expect(checkTurn({ turn, messages: await h.messages(turnId) })).toEqual([]);
}

describe('the agent loop', () => {
  it('answers a plain message: one call, one text block, usage, context size, events and a title', async () => {
    const { turnId, conversationId } = await h.openTurn({ text: 'Say hello.' });
    const mark = h.fake.requests.length;
    h.fake.enqueue({
      text: 'Hello there.',
      usage: { prompt_tokens: 321, completion_tokens: 4, cached_tokens: 100 },
    });

    await h.run(turnId);

    const turn = await h.turn(turnId);
    expect(turn).toMatchObject({ status: 'completed', error: null, contextTokens: 321 });
    const [call] = h.turnCalls(mark);
    expect(h.turnCalls(mark)).toHaveLength(1);
    expect(call.body).toMatchObject({ model: 'gpt-test', stream: true });
    expect('reasoning_effort' in call.body).toBe(false);
    const system = call.body.messages.filter((m: { role: string }) => m.role === 'system');
    expect(system.map((m: { content: string }) => m.content.split('\n')[0])).toEqual([
      '# Portal floor',
      '# Author instructions',
    ]);
    expect(call.body.messages.at(-1)).toEqual({ role: 'user', content: 'Say hello.' });
    expect(call.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      'load_skill',
      'read_document',
      'search_attachments',
      'read_tool_result',
      'ask_clarification',
    ]);

    const messages = await h.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1].blocks).toEqual([
      expect.objectContaining({
        seq: 2,
        kind: 'text',
        text: 'Hello there.',
        narration: false,
        steering: false,
      }),
    ]);
    const usage = await h.usage(turnId);
    expect(usage).toEqual([
      expect.objectContaining({
        kind: 'turn',
        model: 'gpt-test',
        inputTokens: 321,
        outputTokens: 4,
        cachedTokens: 100,
      }),
      expect.objectContaining({ kind: 'summary', model: 'gpt-test' }),
    ]);
    // 221 fresh at $1, 100 cached at $0.5, 4 out at $2 per million.
    expect(usage[0].cost).toBeCloseTo((221 + 50 + 8) / 1e6, 12);

    const conversation = await new ConversationRepository(h.db.dataSource).get(
      ORG,
      ConversationId(conversationId),
    );
    expect(conversation!.title).toBe('Test title');
    const titleCall = h.fake.requests.slice(mark).find((r) => !r.body.tools);
    expect(titleCall!.body.messages.slice(1, 3)).toEqual([
      { role: 'user', content: 'Say hello.' },
      { role: 'assistant', content: 'Hello there.' },
    ]);

    const events = await h.events(conversationId);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('turn_state');
    expect(types).toContain('text_delta');
    // The title call's usage (turn 1's) follows the turn's end.
    expect(types.slice(-3)).toEqual(['turn_state', 'turn_finished', 'usage']);
    expect(events.at(-2)).toEqual({ type: 'turn_finished', turnId, status: 'completed' });
    expect(events.at(-1)).toMatchObject({ type: 'usage', row: { kind: 'summary' } });
    const text = messages[1].blocks[0];
    const started = events.findIndex((e) => e.type === 'block_started' && e.blockId === text.id);
    const finished = events.findIndex((e) => e.type === 'block_finished' && e.block.id === text.id);
    expect(started).toBeGreaterThanOrEqual(0);
    expect(finished).toBeGreaterThan(started);
    // The answer is stored without waiting for its deltas' publication: they still come first.
    const deltas = events.flatMap((e, i) => (e.type === 'text_delta' ? [i] : []));
    expect(deltas.length).toBeGreaterThan(1);
    expect(Math.min(...deltas)).toBeGreaterThan(started);
    expect(Math.max(...deltas)).toBeLessThan(finished);
    expect(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('Hello there.');
    await expectValid(turnId);
  });

  it('records thinking, narration, the tool call and its result, then the answer; effort goes to a reasoning model', async () => {
    const { turnId, conversationId } = await h.openTurn({
      agentId: 'thinker',
      effort: 'high',
      text: 'Check this claim.',
      catalogueSkillIds: [factCheck],
    });
    const mark = h.fake.requests.length;
    h.fake.enqueue(
      {
        reasoning: 'The fact-check skill fits.',
        text: 'Let me load the skill.',
        toolCalls: [toolCall('load_skill', { slug: 'fact-check' })],
      },
      { reasoning: 'Now answer.', text: 'The claim holds.' },
    );

    await h.run(turnId);

    const calls = h.turnCalls(mark);
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => c.body.reasoning_effort)).toEqual(['high', 'high']);
    expect(calls[0].body.messages[2].content).toContain('fact-check — The fact-check skill.');
    // Narration and thinking never enter the prompt; the call and its result do.
    const second = calls[1].body.messages.slice(-2);
    expect(second[0]).toMatchObject({
      role: 'assistant',
      content: null,
      tool_calls: [{ function: { name: 'load_skill', arguments: '{"slug":"fact-check"}' } }],
    });
    expect(second[1]).toMatchObject({
      role: 'tool',
      content: '# fact-check (/fact-check)\n\nInstructions of fact-check.',
    });
    expect(transcriptOf(calls[1])).not.toContain('Let me load the skill.');

    const blocks = await h.blocks(turnId);
    expect(blocks.map((b) => [b.kind, 'narration' in b ? b.narration : null])).toEqual([
      ['text', false],
      ['thinking', null],
      ['text', true],
      ['tool_use', null],
      ['tool_result', null],
      ['thinking', null],
      ['text', false],
    ]);
    expect(blocks.map((b) => b.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const result = blocks[4];
    expect(result).toMatchObject({ kind: 'tool_result', outcome: 'ok', ref: expect.stringMatching(/^tr_/) });
    expect((await h.turn(turnId))!.status).toBe('completed');

    const events = await h.events(conversationId);
    const thinking = blocks[1];
    const order = (test: (e: (typeof events)[number]) => boolean) => events.findIndex(test);
    expect(order((e) => e.type === 'block_started' && e.blockId === thinking.id)).toBeLessThan(
      order((e) => e.type === 'thinking_delta' && e.blockId === thinking.id),
    );
    expect(order((e) => e.type === 'thinking_delta' && e.blockId === thinking.id)).toBeLessThan(
      order((e) => e.type === 'block_finished' && e.block.id === thinking.id),
    );
    await expectValid(turnId);
  });

  it('load_skill hands over only offered skills: a selectable draft or unbound skill is refused', async () => {
    await addSkill(h, skill('secret-draft', { published: false }));
    const selected = await addSkill(h, skill('chosen'));
    await addSkill(h, skill('unbound'));
    const { turnId } = await h.openTurn({
      text: '/chosen go',
      selectedSkillIds: [selected],
      catalogueSkillIds: [factCheck],
    });
    h.fake.enqueue(
      {
        toolCalls: [
          toolCall('load_skill', { slug: 'secret-draft' }),
          toolCall('load_skill', { slug: 'unbound' }),
          toolCall('load_skill', { slug: 'chosen' }),
          toolCall('load_skill', { slug: 'fact-check' }),
        ],
      },
      'Done.',
    );
    await h.run(turnId);
    const results = (await h.blocks(turnId)).flatMap((b) => (b.kind === 'tool_result' ? [b] : []));
    expect(results.map((r) => r.outcome)).toEqual(['error', 'error', 'ok', 'ok']);
    expect(results[0].content).toMatch(/^No skill "secret-draft" is available to load/);
    expect(results.map((r) => r.content).join('\n')).not.toContain('Instructions of secret-draft.');
    expect(results[2].content).toContain('Instructions of chosen.');
    await expectValid(turnId);
  });

  it('runs several tool calls of one model call in order', async () => {
    const { turnId } = await h.openTurn({ catalogueSkillIds: [factCheck] });
    h.fake.enqueue(
      {
        toolCalls: [
          toolCall('load_skill', { slug: 'fact-check' }),
          toolCall('read_tool_result', { ref: 'ref:tr_nope' }),
        ],
      },
      'Both done.',
    );
    await h.run(turnId);
    const blocks = await h.blocks(turnId);
    expect(blocks.map((b) => b.kind)).toEqual([
      'text',
      'tool_use',
      'tool_use',
      'tool_result',
      'tool_result',
      'text',
    ]);
    expect(blocks[3]).toMatchObject({ outcome: 'ok', callId: (blocks[1] as { callId: string }).callId });
    expect(blocks[4]).toMatchObject({
      outcome: 'error',
      content: 'No tool result ref:tr_nope in this conversation.',
    });
    await expectValid(turnId);
  });

  it('answers malformed tool arguments and an unknown tool with an error result and goes on', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    h.fake.enqueue(
      { toolCalls: [toolCall('load_skill', '{"slug": '), toolCall('teleport', { to: 'Mars' })] },
      'Sorry about that.',
    );
    await h.run(turnId);
    const results = (await h.blocks(turnId)).filter((b) => b.kind === 'tool_result');
    expect(results).toEqual([
      expect.objectContaining({ outcome: 'error', content: expect.stringContaining('not valid JSON') }),
      expect.objectContaining({
        outcome: 'error',
        content: expect.stringContaining('Unknown tool "teleport"'),
      }),
    ]);
    const second = h.turnCalls(mark)[1];
    expect(transcriptOf(second)).toContain('not valid JSON');
    expect((await h.turn(turnId))!.status).toBe('completed');
  });

  it('fails with max_calls_reached after MAX_CALLS_PER_TURN calls', async () => {
    const { turnId } = await h.openTurn({ catalogueSkillIds: [factCheck] });
    const mark = h.fake.requests.length;
    for (let i = 0; i < 3; i++)
      h.fake.enqueue({ toolCalls: [toolCall('load_skill', { slug: 'fact-check' })] });
    await h.run(turnId);
    expect(await h.turn(turnId)).toMatchObject({ status: 'failed', error: 'max_calls_reached' });
    expect(h.turnCalls(mark)).toHaveLength(3);
    await expectValid(turnId);
  });
});

describe('steering', () => {
  it('is read by the next call of the turn, where it arrived', async () => {
    const { turnId } = await h.openTurn({ text: 'Check Q3.', catalogueSkillIds: [factCheck] });
    const mark = h.fake.requests.length;
    h.fake.enqueue(async () => {
      await h.steer(turnId, 'Also check Q4.');
      return { toolCalls: [toolCall('load_skill', { slug: 'fact-check' })] };
    }, 'Q3 and Q4 checked.');
    await h.run(turnId);

    const calls = h.turnCalls(mark);
    expect(calls).toHaveLength(2);
    expect(transcriptOf(calls[0])).not.toContain('Also check Q4.');
    expect(calls[1].body.messages.slice(-3).map((m: { role: string }) => m.role)).toEqual([
      'assistant',
      'tool',
      'user',
    ]);
    expect(calls[1].body.messages.at(-1)).toEqual({ role: 'user', content: 'Also check Q4.' });
    const messages = await h.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
  });

  it('arriving during the call that gives the answer makes one more call', async () => {
    const { turnId, conversationId } = await h.openTurn({ text: 'Explain Q3.' });
    const mark = h.fake.requests.length;
    h.fake.enqueue(async () => {
      await h.steer(turnId, 'Make it shorter.');
      return 'A long explanation of Q3.';
    }, 'Q3 went well.');
    await h.run(turnId);

    const calls = h.turnCalls(mark);
    expect(calls).toHaveLength(2);
    expect(calls[1].body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'A long explanation of Q3.' },
      { role: 'user', content: 'Make it shorter.' },
    ]);
    const messages = await h.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messages[3].blocks).toEqual([expect.objectContaining({ kind: 'text', text: 'Q3 went well.' })]);
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
    // The first answer, stored while the turn stayed running, was published like any block.
    const finished = (await h.events(conversationId)).flatMap((e) =>
      e.type === 'block_finished' && e.block.kind === 'text' ? [e.block.text] : [],
    );
    expect(finished).toEqual(expect.arrayContaining(['A long explanation of Q3.', 'Q3 went well.']));
  });
});

describe('running a turn again', () => {
  it('a job run twice records nothing twice', async () => {
    const { turnId } = await h.openTurn();
    h.fake.enqueue('Once.');
    await h.run(turnId);
    const blocks = await h.blocks(turnId);
    const usage = await h.usage(turnId);
    const requests = h.fake.requests.length;

    await h.run(turnId);

    expect(h.fake.requests.length).toBe(requests);
    expect(await h.blocks(turnId)).toEqual(blocks);
    expect(await h.usage(turnId)).toEqual(usage);
  });

  it('a turn claimed by a dead worker is finished by another once the lease lapses', async () => {
    const { turnId } = await h.openTurn();
    await new TurnLeaseRepository(h.db.dataSource).claim(ORG, TurnId(turnId), 'dead-worker', -1000);
    h.fake.enqueue('Taken over.');
    await h.run(turnId);
    expect((await h.turn(turnId))!.status).toBe('completed');
    expect((await h.blocks(turnId)).at(-1)).toMatchObject({ text: 'Taken over.' });
  });

  it('a turn held by a live lease is left alone, and its job told to look again later', async () => {
    const { turnId } = await h.openTurn();
    await new TurnLeaseRepository(h.db.dataSource).claim(ORG, TurnId(turnId), 'live-worker', 60_000);
    const requests = h.fake.requests.length;
    await expect(h.run(turnId)).resolves.toBe('busy');
    expect(h.fake.requests.length).toBe(requests);
    expect((await h.turn(turnId))!.status).toBe('running');
  });

  it('a selected skill deactivated before the turn runs fails it with skill_rejected naming the slug', async () => {
    const draft = await addSkill(h, skill('draft-skill'));
    const { turnId } = await h.openTurn({ text: '/draft-skill go', selectedSkillIds: [draft] });
    await new SkillRepository(h.db.dataSource).update(ORG, draft, { status: 'inactive' });
    const requests = h.fake.requests.length;
    await h.run(turnId);
    expect(await h.turn(turnId)).toMatchObject({ status: 'failed', error: 'skill_rejected: draft-skill' });
    expect(h.turnCalls(requests)).toHaveLength(0);
  });

  it('a turn resumed after a pause reads its selected skills again and fails once one is inactive', async () => {
    const chosen = await addSkill(h, skill('resume-me'));
    const { turnId } = await h.openTurn({ text: '/resume-me go', selectedSkillIds: [chosen] });
    const mark = h.fake.requests.length;
    h.fake.enqueue({ toolCalls: [toolCall('ask_clarification', { question: 'Which?' })] });
    await h.run(turnId);
    expect((await h.turn(turnId))!.status).toBe('paused');
    expect(transcriptOf(h.turnCalls(mark)[0])).toContain('Instructions of resume-me.');

    await new SkillRepository(h.db.dataSource).update(ORG, chosen, { status: 'inactive' });
    const request = (await h.blocks(turnId)).at(-1)!;
    await h.answer(turnId, request.id, { answer: 'That one.' });
    const requests = h.fake.requests.length;
    await h.run(turnId);
    expect(await h.turn(turnId)).toMatchObject({ status: 'failed', error: 'skill_rejected: resume-me' });
    expect(h.turnCalls(requests)).toHaveLength(0);
  });

  it('names turn 1 when its job is delivered again after the title was missed', async () => {
    const { turnId, conversationId } = await h.openTurn({ text: 'Name me.' });
    const conversations = new ConversationRepository(h.db.dataSource);
    h.fake.enqueue('Named later.', fakeError(400, 'Title refused'));
    await h.run(turnId);
    expect((await conversations.get(ORG, ConversationId(conversationId)))!.title).toBeNull();
    await h.run(turnId);
    expect((await conversations.get(ORG, ConversationId(conversationId)))!.title).toBe('Test title');
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['turn', 'summary']);
  });

  it('names only the first turn of a conversation, and never touches its context size', async () => {
    const first = await h.openTurn({ text: 'First.' });
    h.fake.enqueue({ text: 'One.', usage: { prompt_tokens: 50, completion_tokens: 1 } });
    await h.run(first.turnId);
    const second = await h.openTurn({ text: 'Second.', conversationId: first.conversationId });
    const mark = h.fake.requests.length;
    h.fake.enqueue('Two.');
    await h.run(second.turnId);

    expect(h.fake.requests.slice(mark)).toHaveLength(1);
    expect((await h.usage(second.turnId)).map((u) => u.kind)).toEqual(['turn']);
    expect((await h.usage(first.turnId)).map((u) => u.kind)).toEqual(['turn', 'summary']);
    expect((await h.turn(first.turnId))!.contextTokens).toBe(50);
    // The second turn's call read the first turn from memory.
    expect(transcriptOf(h.fake.requests[mark])).toContain('One.');
  });
});
