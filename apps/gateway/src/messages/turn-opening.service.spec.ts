import { TurnRepository, type PersonTurn } from '@portal/dal';
import { ID, newTestService, turnRecord } from '@portal/testing/unit';
import type { Principal } from '../common/principal.types';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { MetricsService } from '../metrics/metrics.service';
import { TurnOpeningService } from './turn-opening.service';

const CALLER: Principal = { orgId: ID.org, userId: ID.user, role: 'member', via: 'apiKey' };
const INPUT: PersonTurn = { conversationId: ID.conversation, text: 'hello', effort: 'low' };
const TURN = turnRecord({
  n: 3,
  effort: 'low',
  model: 'seeing',
});
const BLOCK = { id: 'b-1', seq: 1, kind: 'text', text: 'hello', narration: false, steering: false } as const;

function setup() {
  const { sut, mocks } = newTestService(TurnOpeningService, {
    mocks: { turns: TurnRepository, dispatch: TurnDispatchService, metrics: MetricsService },
  });
  mocks.turns.createForPerson.mockResolvedValue({
    turn: TURN,
    message: { id: 'msg-1', turnId: ID.turn, role: 'user', attachmentIds: [], blocks: [BLOCK] },
  });
  const enqueue = jest.fn(async (_turnId: string) => undefined);
  return { sut, mocks, enqueue };
}

describe('TurnOpeningService', () => {
  it("records the turn in the caller's org, publishes its events, and only then enqueues its job", async () => {
    const { sut, mocks, enqueue } = setup();

    await expect(sut.open(CALLER, INPUT, enqueue)).resolves.toBe(TURN);

    expect(mocks.turns.createForPerson).toHaveBeenCalledWith(ID.org, ID.user, INPUT);
    expect(mocks.dispatch.publish).toHaveBeenCalledWith(ID.conversation, [
      { type: 'turn_started', turnId: ID.turn },
      { type: 'block_finished', turnId: ID.turn, block: BLOCK },
      { type: 'turn_state', turnId: ID.turn, status: 'queued' },
    ]);
    expect(enqueue).toHaveBeenCalledWith(ID.turn);
    // A worker that takes the job at once publishes `running` after these, never before.
    expect(mocks.dispatch.publish.mock.invocationCallOrder[0]).toBeLessThan(
      enqueue.mock.invocationCallOrder[0],
    );
    expect(mocks.metrics.turnOpened).toHaveBeenCalledWith('turn');
  });

  it.each([
    ['a message whose conversation is gone answers not_found', undefined, 'not_found'],
    ['a retry after another turn opened answers retry_refused', 3, 'retry_refused'],
  ])('%s, and nothing follows', async (_, afterTurnN, code) => {
    const { sut, mocks, enqueue } = setup();
    mocks.turns.createForPerson.mockResolvedValue(null);
    await expect(sut.open(CALLER, { ...INPUT, afterTurnN }, enqueue)).rejects.toMatchObject({
      code,
    });
    expect(mocks.dispatch.publish).not.toHaveBeenCalled();
    expect(enqueue).not.toHaveBeenCalled();
    expect(mocks.metrics.turnOpened).not.toHaveBeenCalled();
  });
});
