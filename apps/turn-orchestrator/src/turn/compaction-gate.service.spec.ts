import { CompactionClient, type TurnPromptInput } from '@portal/application';
import { ID, newTestService, turnRecord } from '@portal/testing/unit';
import { CONFIG } from '../config.token';
import { CompactionGate } from './compaction-gate.service';
import type { HeldTurn } from './turn-store.service';

describe('CompactionGate', () => {
  it("hands the turn to the compaction worker only once the turn's running has gone out", async () => {
    const { sut, mocks } = newTestService(CompactionGate, {
      provide: [[CONFIG, {}]],
      mocks: { client: CompactionClient },
    });
    let published = (): void => undefined;
    const running = new Promise<void>((resolve) => (published = resolve));
    const held = { orgId: ID.org, turn: turnRecord(), owner: 'worker', running } as HeldTurn;
    const input = { messages: [] } as unknown as TurnPromptInput;

    const compacted = sut.onOverflow(held, input, new AbortController().signal);
    await new Promise((resolve) => setImmediate(resolve));
    expect(mocks.client.compact).not.toHaveBeenCalled();

    published();
    await expect(compacted).resolves.toBeNull();
    expect(mocks.client.compact).toHaveBeenCalledWith(ID.org, held.turn.id, expect.any(Object));
  });
});
