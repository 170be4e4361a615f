import type { PortalEvent } from '@portal/contracts';
import { AgentRepository } from '@portal/dal';
import { AgentId, checkTurn } from '@portal/domain';
import { fakeError, type FakeRequest, type FakeScript } from '@portal/testing';
import { addSkill, ORG, skill, startHarness, type Harness } from '../../test/turn.harness';
import { Reviewer } from './reviewer.service';

/** The output guardrail (SPEC 3): agent `guarded` on gpt-test, reviewed by `judge`. */
let h: Harness;
let factCheck: string;
/** Answers each review request; set per test. */
let judge: (sentence: string) => FakeScript | Promise<FakeScript>;
/** The turn calls' answers, in order (the fake's own queue would answer review calls too). */
const answers: FakeScript[] = [];
const JUDGE_PRICE = { inputPerMTok: 10, outputPerMTok: 20, cachedInputPerMTok: 5 };

beforeAll(async () => {
  h = await startHarness({ models: [{ id: 'judge', contextWindow: 32000, price: JUDGE_PRICE }] });
  factCheck = await addSkill(h, skill('fact-check'));
  await new AgentRepository(h.db.dataSource).upsert(ORG, {
    id: AgentId('guarded'),
    name: 'guarded',
    instructions: 'You are guarded.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [],
    reviewer: 'judge',
    compactionGuidance: null,
  });
  h.fake.setDefault((req) => {
    if (req.body.model === 'judge') return judge(sentenceOf(req));
    return Array.isArray(req.body.tools) ? (answers.shift() ?? 'Fake answer.') : 'Test title';
  });
});
afterAll(async () => {
  await h.close();
});

const reviewUsage = { prompt_tokens: 50, completion_tokens: 1 };
const pass: FakeScript = { text: 'PASS', usage: reviewUsage };

function sentenceOf(request: FakeRequest): string {
  return /<sentence>\n([^]*)\n<\/sentence>$/.exec(request.body.messages[1].content)![1];
}

const reviews = (mark: number) => h.fake.requests.slice(mark).filter((r) => r.body.model === 'judge');

/** The text deltas of one block, as published. */
function deltas(events: PortalEvent[], blockId: string): string[] {
  return events.flatMap((e) => (e.type === 'text_delta' && e.blockId === blockId ? [e.text] : []));
}

/** Every text people were sent on the turn's stream so far. */
async function shownText(conversationId: string): Promise<string> {
  return (await h.events(conversationId)).flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');
}

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('the output guardrail', () => {
  it('shows the answer sentence by sentence, each only once its review passed', async () => {
    const { turnId, conversationId } = await h.openTurn({ agentId: 'guarded', text: 'Tell me.' });
    const mark = h.fake.requests.length;
    const sentences = ['First sentence. ', 'Xin chào, bạn khỏe không? ', 'Third without a stop'];
    const shownAtReview: string[] = [];
    judge = async () => {
      shownAtReview.push(await shownText(conversationId));
      return pass;
    };
    answers.push({
      text: sentences.join(''),
      chunkSize: 5,
      usage: { prompt_tokens: 321, completion_tokens: 9 },
    });

    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({ status: 'completed', error: null, contextTokens: 321 });
    const requests = reviews(mark);
    expect(requests.map(sentenceOf)).toEqual(sentences);
    for (const [i, request] of requests.entries()) {
      expect('tools' in request.body).toBe(false);
      expect(request.body.messages[0].content).toMatch(/exactly `PASS`, or `BLOCK: <reason>`/);
      // Each review reads what was shown before its sentence.
      expect(request.body.messages[1].content).toContain(
        `<shown>\n${sentences.slice(0, i).join('')}\n</shown>`,
      );
      // Nothing of the sentence under review had been sent to clients.
      expect(sentences.slice(0, i).join('').startsWith(shownAtReview[i])).toBe(true);
    }

    const [answer] = (await h.messages(turnId))[1].blocks;
    expect(answer).toMatchObject({ kind: 'text', text: sentences.join(''), narration: false });
    const events = await h.events(conversationId);
    expect(deltas(events, answer.id)).toEqual(sentences);

    const usage = await h.usage(turnId);
    expect(usage.map((u) => [u.kind, u.model])).toEqual([
      ['review', 'judge'],
      ['review', 'judge'],
      ['review', 'judge'],
      ['turn', 'gpt-test'],
      ['summary', 'gpt-test'],
    ]);
    // Priced at the reviewer's price: 50 in at $10, 1 out at $20 per million.
    expect(usage[0]).toMatchObject({ inputTokens: 50, outputTokens: 1 });
    expect(usage[0].cost).toBeCloseTo((500 + 20) / 1e6, 12);
    expect(events.filter((e) => e.type === 'usage' && e.row.kind === 'review')).toHaveLength(3);
    await expectValid(turnId);
  });

  it('reviews narration like the answer', async () => {
    const { turnId, conversationId } = await h.openTurn({
      agentId: 'guarded',
      catalogueSkillIds: [factCheck],
    });
    const mark = h.fake.requests.length;
    judge = () => pass;
    answers.push(
      {
        text: 'Let me load the skill.',
        toolCalls: [{ name: 'load_skill', arguments: { slug: 'fact-check' } }],
      },
      'The claim holds.',
    );

    await h.run(turnId);

    expect((await h.turn(turnId))!.status).toBe('completed');
    expect(reviews(mark).map(sentenceOf)).toEqual(['Let me load the skill.', 'The claim holds.']);
    const blocks = await h.blocks(turnId);
    expect(blocks.map((b) => b.kind)).toEqual(['text', 'text', 'tool_use', 'tool_result', 'text']);
    const events = await h.events(conversationId);
    expect(deltas(events, blocks[1].id)).toEqual(['Let me load the skill.']);
    await expectValid(turnId);
  });

  it('a blocked sentence is never shown nor stored, ends the turn failed and runs none of the call', async () => {
    const { turnId, conversationId } = await h.openTurn({
      agentId: 'guarded',
      catalogueSkillIds: [factCheck],
    });
    const mark = h.fake.requests.length;
    judge = (sentence) => (sentence.includes('hunter2') ? { text: 'BLOCK: leaks a password' } : pass);
    answers.push({
      text: `Fine start. The password is hunter2. ${'And this goes on for a while. '.repeat(4)}`,
      toolCalls: [{ name: 'load_skill', arguments: { slug: 'fact-check' } }],
      chunkSize: 6,
      delayMs: 50,
    });

    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({
      status: 'failed',
      error: 'blocked_by_review: leaks a password',
      // The model stream was stopped before it finished: no usage, so no context size.
      contextTokens: null,
    });
    expect(reviews(mark).map(sentenceOf)).toEqual(['Fine start. ', 'The password is hunter2. ']);
    expect(h.turnCalls(mark)).toHaveLength(1);
    const blocks = await h.blocks(turnId);
    expect(blocks.slice(1)).toEqual([expect.objectContaining({ kind: 'text', text: 'Fine start. ' })]);
    const events = await h.events(conversationId);
    expect(JSON.stringify(events)).not.toContain('hunter2');
    expect(deltas(events, blocks[1].id)).toEqual(['Fine start. ']);
    expect(events.find((e) => e.type === 'turn_finished')).toEqual({
      type: 'turn_finished',
      turnId,
      status: 'failed',
      error: 'blocked_by_review: leaks a password',
    });
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['review', 'review', 'summary']);
    await expectValid(turnId);
  });

  it('a block after the model finished keeps the call usage and context size; nothing shown stores no text', async () => {
    const { turnId, conversationId } = await h.openTurn({ agentId: 'guarded' });
    judge = () => ({ text: 'BLOCK: rude', usage: reviewUsage });
    answers.push({ text: 'Go away.', usage: { prompt_tokens: 222, completion_tokens: 3 } });

    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({
      status: 'failed',
      error: 'blocked_by_review: rude',
      contextTokens: 222,
    });
    expect((await h.messages(turnId)).flatMap((m) => m.blocks).map((b) => b.kind)).toEqual(['text']);
    expect((await h.usage(turnId)).map((u) => [u.kind, u.inputTokens])).toEqual([
      ['review', 50],
      ['turn', 222],
      ['summary', expect.any(Number)],
    ]);
    expect((await h.events(conversationId)).some((e) => e.type === 'text_delta')).toBe(false);
    await expectValid(turnId);
  });

  it('a turn cut off while a sentence is under review keeps only the text shown', async () => {
    const { turnId, conversationId } = await h.openTurn({ agentId: 'guarded' });
    judge = (sentence) => (sentence.startsWith('Second') ? { kind: 'hang' } : pass);
    answers.push('First. Second, never reviewed to the end.');

    const run = h.run(turnId);
    await h.waitForEvent(conversationId, (e) => e.type === 'text_delta');
    await h.cancel(turnId);
    await run;

    expect((await h.turn(turnId))!.status).toBe('cut_off');
    const blocks = await h.blocks(turnId);
    expect(blocks.slice(1)).toEqual([expect.objectContaining({ kind: 'text', text: 'First. ' })]);
    expect(JSON.stringify(await h.events(conversationId))).not.toContain('never reviewed');
    await expectValid(turnId);
  });

  it('fails closed on a malformed review answer and on a review call that keeps failing', async () => {
    judge = () => 'Looks fine to me.';
    const malformed = await h.openTurn({ agentId: 'guarded' });
    await h.run(malformed.turnId);
    expect((await h.turn(malformed.turnId))!.error).toBe(
      'blocked_by_review: unreadable review answer "Looks fine to me."',
    );

    judge = () => fakeError(500, 'Review down');
    const failing = await h.openTurn({ agentId: 'guarded' });
    await h.run(failing.turnId);
    expect(await h.turn(failing.turnId)).toMatchObject({ status: 'failed' });
    expect((await h.turn(failing.turnId))!.error).toMatch(
      /^blocked_by_review: the review call failed \(model_error: HTTP 500 after 3 attempts: .*Review down\)$/,
    );
    expect((await h.events(failing.conversationId)).some((e) => e.type === 'text_delta')).toBe(false);
  });

  it('records a review call once however often its usage is written', async () => {
    const { turnId } = await h.openTurn({ agentId: 'guarded' });
    const turn = (await h.turn(turnId))!;
    judge = () => pass;
    const reviewer = h.app.get(Reviewer);
    const signal = new AbortController().signal;
    for (let i = 0; i < 2; i++) {
      await expect(
        reviewer.review(
          turn,
          { orgId: ORG, model: 'judge' },
          { shown: '', sentence: 'Hi.' },
          'review:x:0',
          signal,
        ),
      ).resolves.toEqual({ pass: true });
    }
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['review']);
  });
});
