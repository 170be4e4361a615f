import type { PortalEvent } from '@portal/contracts';
import type { Block } from '@portal/domain';
import type { MessageView, TurnView } from './api';
import { Transcript } from './transcript';

const T = 'turn-2';
const text = (id: string, seq: number, body: string, extra: Partial<Block> = {}): Block =>
  ({ id, seq, kind: 'text', text: body, narration: false, steering: false, ...extra }) as Block;

const settled = {
  error: null,
  model: 'local',
  contextTokens: null,
  usage: { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: 0 },
};
const turns: TurnView[] = [
  { id: 'turn-1', n: 1, kind: 'turn', status: 'completed', effort: 'medium', ...settled },
  { id: T, n: 2, kind: 'turn', status: 'running', effort: 'high', ...settled },
];
const messages: MessageView[] = [
  { id: 'm1', turnId: 'turn-1', role: 'user', attachmentIds: [], blocks: [text('b1', 1, 'Hello')] },
  { id: 'm2', turnId: 'turn-1', role: 'assistant', attachmentIds: [], blocks: [text('b2', 2, 'Hi there.')] },
  { id: 'm3', turnId: T, role: 'user', attachmentIds: [], blocks: [text('b3', 1, 'Tell me more')] },
];

/** The events of turn 2 as the stream carries them, with ids 1-0, 2-0, ... */
function turnEvents(): [string, PortalEvent][] {
  const events: PortalEvent[] = [
    { type: 'block_started', turnId: T, blockId: 'b4', kind: 'text' },
    { type: 'text_delta', turnId: T, blockId: 'b4', text: 'Tiếng ' },
    { type: 'text_delta', turnId: T, blockId: 'b4', text: 'Việt 👩🏽‍💻' },
    { type: 'block_finished', turnId: T, block: text('b4', 2, 'Tiếng Việt 👩🏽‍💻') },
    { type: 'turn_finished', turnId: T, status: 'completed' },
  ];
  return events.map((e, i) => [`${i + 1}-0`, e]);
}

function shape(t: Transcript) {
  return t.messages.map((m) => `${m.role}:${m.blocks.map((b) => b.block?.id ?? `~${b.id}`).join(',')}`);
}

describe('Transcript', () => {
  it('streams a block and finishes it', () => {
    const t = new Transcript(messages, turns);
    const changes = turnEvents()
      .slice(0, 3)
      .flatMap(([id, e]) => t.apply(id, e));
    expect(changes.map((c) => c.type)).toEqual(['structure', 'delta', 'delta']);
    expect(shape(t)).toEqual(['user:b1', 'assistant:b2', 'user:b3', 'assistant:~b4']);
    expect(t.block('b4')!.streamed).toBe('Tiếng Việt 👩🏽‍💻');
    t.apply(...turnEvents()[3]);
    t.apply(...turnEvents()[4]);
    expect(shape(t)).toEqual(['user:b1', 'assistant:b2', 'user:b3', 'assistant:b4']);
    expect(t.openTurn()).toBeNull();
  });

  it('applies an event id once (a reconnection that replays)', () => {
    const t = new Transcript(messages, turns);
    for (const [id, e] of [...turnEvents().slice(0, 3), ...turnEvents().slice(1, 3)]) t.apply(id, e);
    expect(t.block('b4')!.streamed).toBe('Tiếng Việt 👩🏽‍💻');
  });

  it('ignores a replay of what the loaded transcript already holds (a reload after the block finished)', () => {
    const loaded: MessageView[] = [
      ...messages,
      { id: 'm4', turnId: T, role: 'assistant', attachmentIds: [], blocks: [text('b4', 2, 'Tiếng Việt 👩🏽‍💻')] },
    ];
    const t = new Transcript(loaded, turns);
    const changes = turnEvents().flatMap(([id, e]) => t.apply(id, e));
    expect(changes.some((c) => c.type === 'delta')).toBe(false);
    expect(shape(t)).toEqual(['user:b1', 'assistant:b2', 'user:b3', 'assistant:b4']);
  });

  it('keeps a streaming block when a freshly loaded transcript does not hold it yet', () => {
    const t = new Transcript(messages, turns);
    for (const [id, e] of turnEvents().slice(0, 2)) t.apply(id, e);
    t.merge(messages, turns);
    expect(shape(t)).toEqual(['user:b1', 'assistant:b2', 'user:b3', 'assistant:~b4']);
    expect(t.block('b4')!.streamed).toBe('Tiếng ');
  });

  it('finishes a streaming block from a freshly loaded transcript when its event was missed', () => {
    const t = new Transcript(messages, turns);
    for (const [id, e] of turnEvents().slice(0, 2)) t.apply(id, e);
    const loaded: MessageView[] = [
      ...messages,
      { id: 'm4', turnId: T, role: 'assistant', attachmentIds: [], blocks: [text('b4', 2, 'Tiếng Việt 👩🏽‍💻')] },
    ];
    const changes = t.merge(loaded, [turns[0], { ...turns[1], status: 'completed' }]);
    expect(changes).toContainEqual({ type: 'block', block: t.block('b4') });
    expect(shape(t)).toEqual(['user:b1', 'assistant:b2', 'user:b3', 'assistant:b4']);
    expect(t.openTurn()).toBeNull();
  });

  it('places a steering message after what the turn has shown, and what follows after it', () => {
    const t = new Transcript(messages, turns);
    for (const [id, e] of turnEvents().slice(0, 2)) t.apply(id, e);
    t.apply('9-0', {
      type: 'block_finished',
      turnId: T,
      block: text('s1', 3, 'shorter please', { steering: true }),
    });
    t.apply('10-0', { type: 'block_started', turnId: T, blockId: 'b5', kind: 'text' });
    expect(shape(t)).toEqual([
      'user:b1',
      'assistant:b2',
      'user:b3',
      'assistant:~b4',
      'user:s1',
      'assistant:~b5',
    ]);
  });

  it('keeps the reason of a failed turn, which arrives after the status that settled it', () => {
    const t = new Transcript(messages, turns);
    t.apply('1-0', { type: 'turn_state', turnId: T, status: 'failed' });
    const changes = t.apply('2-0', {
      type: 'turn_finished',
      turnId: T,
      status: 'failed',
      error: 'model_error: HTTP 500 after 4 attempts: upstream down',
    });
    expect(changes).toEqual([expect.objectContaining({ type: 'turn', settled: false })]);
    expect(t.turns.get(T)).toMatchObject({
      status: 'failed',
      error: 'model_error: HTTP 500 after 4 attempts: upstream down',
    });
    // A reload: the API's turn carries it too, and a settled turn without one takes it.
    const reloaded = new Transcript(messages, [turns[0], { ...turns[1], status: 'failed', error: null }]);
    reloaded.merge(messages, [{ ...turns[1], status: 'failed', error: 'max_calls_reached' }]);
    expect(reloaded.turns.get(T)!.error).toBe('max_calls_reached');
  });

  it("adds the usage rows a turn streams to the API's totals; a turn call sizes the context", () => {
    const usage = { inputTokens: 100, outputTokens: 10, cachedTokens: 0, cost: 0.5 };
    const t = new Transcript(messages, [turns[0], { ...turns[1], usage, contextTokens: 100, model: 'fake' }]);
    const row = (kind: 'turn' | 'summary', inputTokens: number) =>
      ({ kind, model: 'fake', inputTokens, outputTokens: 40, cachedTokens: 0, cost: 0.25 }) as const;
    expect(t.apply('1-0', { type: 'usage', turnId: T, row: row('turn', 900) })).toEqual([
      { type: 'usage', turn: t.turns.get(T) },
    ]);
    t.apply('1-0', { type: 'usage', turnId: T, row: row('turn', 900) });
    t.apply('2-0', { type: 'usage', turnId: T, row: row('summary', 5000) });
    expect(t.turns.get(T)).toMatchObject({
      usage: { inputTokens: 6000, outputTokens: 90, cachedTokens: 0, cost: 1 },
      contextTokens: 900,
    });
  });

  it('never takes an answered request back to pending, nor a settled turn back to running', () => {
    const pending: Block = {
      id: 'r1',
      seq: 2,
      kind: 'approval_request',
      callId: 'c1',
      name: 'deploy',
      arguments: '{}',
      approved: null,
      note: null,
    };
    const t = new Transcript(
      [
        ...messages,
        {
          id: 'm4',
          turnId: T,
          role: 'assistant',
          attachmentIds: [],
          blocks: [{ ...pending, approved: true }],
        },
      ],
      [turns[0], { ...turns[1], status: 'completed' }],
    );
    t.apply('1-0', { type: 'block_finished', turnId: T, block: pending });
    t.apply('2-0', { type: 'turn_state', turnId: T, status: 'paused' });
    expect(t.block('r1')!.block).toMatchObject({ approved: true });
    expect(t.turns.get(T)!.status).toBe('completed');
  });

  it('leaves events of no turn (an attachment read) and unknown kinds alone', () => {
    const t = new Transcript(messages, [turns[0], { ...turns[1], status: 'completed' }]);
    const attachment = { id: 'a1', kind: 'document', filename: 'r.md', status: 'reading' } as never;
    expect(t.apply('1-0', { type: 'attachment_progress', attachment })).toEqual([]);
    expect(t.apply('2-0', { type: 'something_new', turnId: 'turn-9' } as never)).toEqual([]);
    expect(t.openTurn()).toBeNull();
    expect(t.turnList()).toHaveLength(2);
  });

  it('follows a new turn opened elsewhere, and compaction while it is written', () => {
    const t = new Transcript(messages, [turns[0], { ...turns[1], status: 'completed' }]);
    const changes = t.apply('1-0', { type: 'turn_started', turnId: 'turn-3' });
    expect(changes).toEqual([expect.objectContaining({ type: 'turn' })]);
    t.apply('2-0', {
      type: 'block_finished',
      turnId: 'turn-3',
      block: text('u3', 1, '/compact keep figures'),
    });
    t.apply('3-0', { type: 'compaction_started', turnId: 'turn-3' });
    expect(t.turns.get('turn-3')).toMatchObject({ n: 3, compacting: true });
    t.apply('4-0', {
      type: 'compaction_finished',
      turnId: 'turn-3',
      block: {
        id: 'c3',
        seq: 2,
        kind: 'compaction',
        summary: 'Summary of turns 1–2',
        trigger: 'MANUAL',
        coversTurns: { from: 1, to: 2 },
      },
    });
    expect(t.turns.get('turn-3')!.compacting).toBe(false);
    expect(shape(t).slice(-2)).toEqual(['user:u3', 'assistant:c3']);
  });
});
