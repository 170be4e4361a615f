import { isPendingRequest } from './block.types';

describe('isPendingRequest', () => {
  it('is true only for an unanswered request', () => {
    const base = { id: 'b1', seq: 1, callId: 'c1' };
    expect(
      isPendingRequest({ ...base, kind: 'clarification_request', question: 'q', options: [], answer: null }),
    ).toBe(true);
    expect(
      isPendingRequest({ ...base, kind: 'clarification_request', question: 'q', options: [], answer: 'a' }),
    ).toBe(false);
    expect(
      isPendingRequest({
        ...base,
        kind: 'approval_request',
        name: 't',
        arguments: '{}',
        approved: null,
        note: null,
      }),
    ).toBe(true);
    expect(
      isPendingRequest({ id: 'b2', seq: 2, kind: 'text', text: 'x', narration: false, steering: false }),
    ).toBe(false);
  });
});
