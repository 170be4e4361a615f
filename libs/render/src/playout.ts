import { SCREEN_LIMITS } from '@portal/prompt';
import { createGraphemeBuffer } from './graphemes';

/**
 * SPEC 9, "Live text": streamed text is played out a character (grapheme cluster) at a time
 * `PLAYOUT_LAG_MS` behind what has arrived, never slower than `PLAYOUT_MIN_CHARS_PER_SECOND`; the
 * speed eases toward its target over `PLAYOUT_EASE_MS` (SCREEN_LIMITS); what is left when the
 * stream ends plays out rather than jumping in.
 *
 * The pacing: the target speed is the one that would show everything that has arrived within
 * `lagMs` (backlog / lag). A stream arriving at a steady rate r keeps a backlog of r × lag, so the
 * screen runs `lagMs` behind arrival at the same rate; a burst (a sentence released at once by the
 * output guardrail) raises the target, and the speed follows it with an exponential ease whose
 * time constant is a third of `easeMs` (95 % of the way after `easeMs`). While anything is waiting
 * the speed never falls below `minCharsPerSecond`.
 */
export interface PlayoutOptions {
  /** The clock (milliseconds): `performance.now` in a browser, a fake one in tests. */
  now: () => number;
  lagMs?: number;
  minCharsPerSecond?: number;
  easeMs?: number;
}

export interface Playout {
  /** Text that has just arrived. */
  push(text: string): void;
  /** The stream is over: the rest plays out, and the last cluster is known to be complete. */
  finish(): void;
  /** Advances to `now` (default: the clock) and returns the clusters to reveal, in order. */
  tick(now?: number): string[];
  /** Reveals at once everything that can be shown (a reader who asked for reduced motion). */
  flush(): string[];
  /** Everything revealed so far. */
  readonly text: string;
  /** Clusters that have arrived complete and are not shown yet. */
  readonly backlog: number;
  /** Characters per second at the last tick. */
  readonly speed: number;
  /** The speed the last tick was easing toward. */
  readonly targetSpeed: number;
  readonly finished: boolean;
  /** Finished and everything shown. */
  readonly done: boolean;
}

export function createPlayout(options: PlayoutOptions): Playout {
  const clock = options.now;
  const lagSeconds = (options.lagMs ?? SCREEN_LIMITS.PLAYOUT_LAG_MS) / 1000;
  const floor = options.minCharsPerSecond ?? SCREEN_LIMITS.PLAYOUT_MIN_CHARS_PER_SECOND;
  const tau = (options.easeMs ?? SCREEN_LIMITS.PLAYOUT_EASE_MS) / 3 / 1000;

  const buffer = createGraphemeBuffer();
  let shown = 0; // clusters revealed
  let position = 0; // fractional clusters played out
  let speed = 0;
  let target = 0;
  let last = clock();
  let finished = false;
  let text = '';

  function reveal(upTo: number): string[] {
    const out = buffer.clusters.slice(shown, upTo);
    shown = upTo;
    text += out.join('');
    return out;
  }

  return {
    push(piece: string) {
      buffer.push(piece);
    },
    finish() {
      if (finished) return;
      finished = true;
      buffer.close();
    },
    tick(now = clock()) {
      const dt = Math.max(0, (now - last) / 1000);
      last = now;
      const available = buffer.clusters.length;
      const backlog = available - position;
      target = backlog > 0 ? Math.max(floor, backlog / lagSeconds) : 0;
      speed += (target - speed) * (1 - Math.exp(-dt / tau));
      if (backlog > 0) {
        position = Math.min(available, position + Math.max(floor, speed) * dt);
      }
      return reveal(Math.floor(position));
    },
    flush() {
      position = buffer.clusters.length;
      return reveal(position);
    },
    get text() {
      return text;
    },
    get backlog() {
      return buffer.clusters.length - shown;
    },
    get speed() {
      return speed;
    },
    get targetSpeed() {
      return target;
    },
    get finished() {
      return finished;
    },
    get done() {
      return finished && shown === buffer.clusters.length;
    },
  };
}
