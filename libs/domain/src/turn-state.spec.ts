import { DomainError } from './domain-error';
import { assertTransition, canTransition, isOpen, isTerminal, TURN_TRANSITIONS } from './turn-state';
import { TURN_STATUSES, type TurnStatus } from './turn.types';

const allowed: [TurnStatus, TurnStatus][] = [
  ['queued', 'running'],
  ['queued', 'cut_off'],
  ['queued', 'failed'],
  ['running', 'paused'],
  ['running', 'completed'],
  ['running', 'failed'],
  ['running', 'cut_off'],
  ['paused', 'running'],
  ['paused', 'cut_off'],
  ['paused', 'failed'],
];

const forbidden: [TurnStatus, TurnStatus][] = [
  ['queued', 'paused'],
  ['queued', 'completed'],
  ['queued', 'queued'],
  ['running', 'queued'],
  ['running', 'running'],
  ['paused', 'completed'],
  ['paused', 'queued'],
  ['paused', 'paused'],
  ['completed', 'running'],
  ['completed', 'failed'],
  ['failed', 'running'],
  ['failed', 'completed'],
  ['cut_off', 'running'],
  ['cut_off', 'queued'],
];

describe('turn state machine', () => {
  it.each(allowed)('allows %s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(() => assertTransition(from, to)).not.toThrow();
  });

  it.each(forbidden)('forbids %s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
    expect(() => assertTransition(from, to)).toThrow(DomainError);
    try {
      assertTransition(from, to);
    } catch (e) {
      expect(e).toMatchObject({ code: 'invalid_transition', details: { from, to } });
    }
  });

  it('allows exactly the listed transitions', () => {
    const table = TURN_STATUSES.flatMap((from) => TURN_STATUSES.map((to) => [from, to] as const)).filter(
      ([f, t]) => canTransition(f, t),
    );
    expect(table).toHaveLength(allowed.length);
    expect(table).toEqual(expect.arrayContaining(allowed));
  });

  it.each(TURN_STATUSES)('%s is either open or terminal', (status) => {
    expect(isOpen(status)).toBe(!isTerminal(status));
    expect(isTerminal(status)).toBe(TURN_TRANSITIONS[status].length === 0);
  });

  it('names the open and terminal states', () => {
    expect(TURN_STATUSES.filter(isOpen)).toEqual(['queued', 'running', 'paused']);
    expect(TURN_STATUSES.filter(isTerminal)).toEqual(['completed', 'failed', 'cut_off']);
  });
});
