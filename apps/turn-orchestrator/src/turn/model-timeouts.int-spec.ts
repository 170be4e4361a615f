import { checkTurn, type TextBlock } from '@portal/domain';
import { startHarness, type Harness } from '../../test/turn.harness';

/** A model that hangs: short timeouts so the test waits for them, not for the 120 s defaults. */
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ env: { MODEL_TIMEOUT_MS: '400', MODEL_IDLE_TIMEOUT_MS: '400' } });
});
afterAll(async () => {
  await h.close();
});

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('a model that hangs', () => {
  it('gives up on a call with no response after MODEL_TIMEOUT_MS, calls again and completes', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    h.fake.enqueue({ kind: 'hang' }, 'Answered the second time.');
    await h.run(turnId);
    expect(h.turnCalls(mark)).toHaveLength(2);
    expect((await h.turn(turnId))!.status).toBe('completed');
    const texts = (await h.blocks(turnId)).filter((b) => b.kind === 'text').map((b) => (b as TextBlock).text);
    expect(texts).toEqual(['Hello?', 'Answered the second time.']);
    await expectValid(turnId);
  });

  it('cuts the turn off with a timeout reason once every attempt hung, never leaving it running', async () => {
    const { turnId } = await h.openTurn();
    h.fake.enqueue({ kind: 'hang' }, { kind: 'hang' }, { kind: 'hang' });
    await h.run(turnId);
    const turn = await h.turn(turnId);
    expect(turn).toMatchObject({ status: 'cut_off' });
    expect(turn!.error).toMatch(/^model_error: timeout after 3 attempts: .*no response for 400 ms/);
    expect((await h.usage(turnId)).filter((u) => u.kind === 'turn')).toHaveLength(0);
    await expectValid(turnId);
  });

  it('drops a stream that goes silent past MODEL_IDLE_TIMEOUT_MS and calls again', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    // Headers at once, then 600 ms of silence before each word: longer than the idle timeout.
    h.fake.enqueue({ text: 'This answer stalls', delayMs: 600 }, 'The whole answer.');
    await h.run(turnId);
    expect(h.turnCalls(mark)).toHaveLength(2);
    expect((await h.turn(turnId))!.status).toBe('completed');
    const texts = (await h.blocks(turnId)).filter((b) => b.kind === 'text').map((b) => (b as TextBlock).text);
    expect(texts).toEqual(['Hello?', 'The whole answer.']);
    await expectValid(turnId);
  });
});
