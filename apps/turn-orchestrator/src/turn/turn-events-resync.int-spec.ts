import { ConversationId } from '@portal/domain';
import { conversationEventsKey } from '@portal/contracts';
import { ConversationEvents } from '@portal/redis';
import { startHarness, type Harness } from '../../test/turn.harness';

/**
 * A worker killed between a commit and its event leaves the stream short; the next run of the turn
 * (a takeover, or the killed job delivered again to the settled turn) publishes what it lacks.
 */
let h: Harness;
let events: ConversationEvents;

beforeAll(async () => {
  h = await startHarness();
  events = h.app.get(ConversationEvents);
});
afterAll(async () => {
  await h.close();
});

/** Opens a turn as the gateway does (its `turn_started` on the stream) and runs it to the end. */
async function settledTurn() {
  const opened = await h.openTurn();
  await events.publish(ConversationId(opened.conversationId), {
    type: 'turn_started',
    turnId: opened.turnId,
  });
  h.fake.enqueue('The answer.');
  await h.run(opened.turnId);
  expect((await h.turn(opened.turnId))!.status).toBe('completed');
  return opened;
}

describe('a settled turn whose last events were never published', () => {
  it('gets them from the next run of its job, once', async () => {
    const { turnId, conversationId } = await settledTurn();
    const key = conversationEventsKey(h.config.prefix, ConversationId(conversationId));
    const answer = (await h.blocks(turnId)).at(-1)!;
    // The worker "died" after committing the answer and the status: neither event went out.
    const lost = (await events.readAfter(ConversationId(conversationId), '0-0')).filter(
      ({ event }) =>
        (event.type === 'block_finished' && event.block.id === answer.id) ||
        event.type === 'turn_state' ||
        event.type === 'turn_finished',
    );
    await h.redis.xdel(key, ...lost.map((e) => e.id));

    await h.run(turnId);
    const after = await h.events(conversationId);
    expect(after.filter((e) => e.type === 'block_finished' && e.block.id === answer.id)).toEqual([
      { type: 'block_finished', turnId, block: answer },
    ]);
    expect(after.filter((e) => e.type === 'turn_finished')).toEqual([
      { type: 'turn_finished', turnId, status: 'completed' },
    ]);

    await h.run(turnId);
    expect(await h.events(conversationId)).toEqual(after);
  });

  it('publishes the whole turn again when Redis lost its events', async () => {
    const { turnId, conversationId } = await settledTurn();
    await h.redis.del(conversationEventsKey(h.config.prefix, ConversationId(conversationId)));
    const blocks = await h.blocks(turnId);

    await h.run(turnId);
    expect(await h.events(conversationId)).toEqual([
      ...blocks.map((block) => ({ type: 'block_finished', turnId, block })),
      { type: 'turn_state', turnId, status: 'completed' },
      { type: 'turn_finished', turnId, status: 'completed' },
    ]);
  });
});
