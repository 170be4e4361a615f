import { DomainError } from './domain-error';
import type { TurnStatus } from './turn.types';

/** SPEC section 2: `queued → running ⇄ paused → completed | failed | cut_off`. */
export const TURN_TRANSITIONS: Readonly<Record<TurnStatus, readonly TurnStatus[]>> = {
  queued: ['running', 'cut_off', 'failed'],
  running: ['paused', 'completed', 'failed', 'cut_off'],
  paused: ['running', 'cut_off', 'failed'],
  completed: [],
  failed: [],
  cut_off: [],
};

export const OPEN_TURN_STATUSES = ['queued', 'running', 'paused'] as const satisfies readonly TurnStatus[];
export const TERMINAL_TURN_STATUSES = [
  'completed',
  'failed',
  'cut_off',
] as const satisfies readonly TurnStatus[];

export function canTransition(from: TurnStatus, to: TurnStatus): boolean {
  return TURN_TRANSITIONS[from]?.includes(to) ?? false;
}

export function assertTransition(from: TurnStatus, to: TurnStatus): void {
  if (!canTransition(from, to)) {
    throw new DomainError('invalid_transition', `A turn cannot go from ${from} to ${to}`, { from, to });
  }
}

export function isTerminal(status: TurnStatus): boolean {
  return (TERMINAL_TURN_STATUSES as readonly TurnStatus[]).includes(status);
}

/** Queued, running or paused: at most one such turn per conversation. */
export function isOpen(status: TurnStatus): boolean {
  return (OPEN_TURN_STATUSES as readonly TurnStatus[]).includes(status);
}
