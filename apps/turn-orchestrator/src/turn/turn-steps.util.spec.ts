import {
  approval,
  assistant,
  clarification,
  makeTurn,
  narration,
  steering,
  text,
  thinking,
  toolResult,
  toolUse,
  user,
  type MessageDraft,
} from '@portal/domain/testing';
import { callBlocks, countCalls, nextStep, usedCallIds } from './turn-steps.util';

const messages = (...drafts: MessageDraft[]) => makeTurn('running', drafts).messages;
const ids = { thinking: 'th', text: 'tx', toolUse: (i: number) => `tu${i}` };

describe('nextStep', () => {
  it('calls the model when the turn has only the person message, or after tool results', () => {
    expect(nextStep(messages(user(text('hi'))))).toEqual({ kind: 'call' });
    expect(nextStep(messages(user(text('hi')), assistant(toolUse('c1'), toolResult('c1'))))).toEqual({
      kind: 'call',
    });
    expect(nextStep(messages(user(text('hi')), assistant()))).toEqual({ kind: 'call' });
  });

  it('is done when the last message is the assistant answer', () => {
    expect(nextStep(messages(user(text('hi')), assistant(thinking('t'), text('Hello.'))))).toEqual({
      kind: 'done',
    });
  });

  it('is not done on narration, or when steering came after the answer', () => {
    expect(nextStep(messages(user(text('hi')), assistant(narration('Let me look.'))))).toEqual({
      kind: 'call',
    });
    expect(
      nextStep(messages(user(text('hi')), assistant(text('Hello.')), user(steering('And Q4?')))),
    ).toEqual({ kind: 'call' });
  });

  it('runs the oldest call without a result, one at a time', () => {
    const step = nextStep(
      messages(user(text('hi')), assistant(toolUse('c1'), toolUse('c2'), toolResult('c1'))),
    );
    expect(step).toMatchObject({ kind: 'tool', use: { callId: 'c2' } });
  });

  it('answers an answered request, and reports a pending one', () => {
    const answered = nextStep(
      messages(user(text('hi')), assistant(toolUse('c1'), clarification('c1', 'Yes'))),
    );
    expect(answered).toMatchObject({ kind: 'answer', use: { callId: 'c1' }, request: { answer: 'Yes' } });
    const denied = nextStep(messages(user(text('hi')), assistant(toolUse('c1'), approval('c1', false))));
    expect(denied).toMatchObject({ kind: 'answer', request: { approved: false } });
    const pending = nextStep(messages(user(text('hi')), assistant(toolUse('c1'), approval('c1', null))));
    expect(pending).toMatchObject({ kind: 'pending' });
  });

  it('finds results across messages when steering split the turn', () => {
    const step = nextStep(
      messages(
        user(text('hi')),
        assistant(toolUse('c1')),
        user(steering('also')),
        assistant(toolResult('c1')),
      ),
    );
    expect(step).toEqual({ kind: 'call' });
  });
});

describe('countCalls', () => {
  it('counts runs of call output between results and messages', () => {
    const turn = messages(
      user(text('hi')),
      assistant(
        thinking('t'),
        narration('n'),
        toolUse('c1'),
        toolUse('c2'),
        toolResult('c1'),
        toolResult('c2'),
      ),
      assistant(toolUse('c3'), approval('c3', true), toolResult('c3'), text('done')),
      user(steering('more')),
      assistant(),
    );
    expect(countCalls(turn)).toBe(3);
    expect(countCalls(messages(user(text('hi'))))).toBe(0);
  });
});

describe('callBlocks', () => {
  const none = new Set<string>();

  it('records thinking, narration and one tool use per call', () => {
    const blocks = callBlocks(
      {
        thinking: 'hmm',
        text: 'Let me look.',
        toolCalls: [{ callId: 'a', name: 'load_skill', arguments: '{}' }],
      },
      ids,
      { usedCallIds: none },
    );
    expect(blocks).toEqual([
      { id: 'th', kind: 'thinking', text: 'hmm' },
      { id: 'tx', kind: 'text', text: 'Let me look.', narration: true, steering: false },
      { id: 'tu0', kind: 'tool_use', callId: 'a', name: 'load_skill', arguments: '{}' },
    ]);
  });

  it('renames a call id the turn already used', () => {
    const blocks = callBlocks(
      {
        thinking: '',
        text: '',
        toolCalls: [
          { callId: 'call_0', name: 'x', arguments: '{}' },
          { callId: 'call_0', name: 'y', arguments: '{}' },
        ],
      },
      ids,
      {
        usedCallIds: usedCallIds(
          messages(user(text('hi')), assistant(toolUse('call_0'), toolResult('call_0'))),
        ),
      },
    );
    expect(blocks.map((b) => (b.kind === 'tool_use' ? b.callId : null))).toEqual(['call_0_2', 'call_0_3']);
  });

  it('keeps what a cut-off call streamed, without its tool uses or an empty text', () => {
    const partial = { thinking: '', text: 'Half an ans', toolCalls: [] };
    expect(callBlocks(partial, ids, { usedCallIds: none, partial: true })).toEqual([
      { id: 'tx', kind: 'text', text: 'Half an ans', narration: false, steering: false },
    ]);
    expect(
      callBlocks({ thinking: '', text: '', toolCalls: [] }, ids, { usedCallIds: none, partial: true }),
    ).toEqual([]);
  });
});
