import { SCREEN_LIMITS } from '@portal/prompt';
import { splitGraphemes } from './graphemes';
import { createPlayout, type Playout } from './playout';

const { PLAYOUT_LAG_MS, PLAYOUT_MIN_CHARS_PER_SECOND } = SCREEN_LIMITS;

/** A fake clock the playout reads; tests move it by hand. */
function fakeClock(start = 0) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
      return t;
    },
  };
}

const FRAME = 16;

/** Ticks frame by frame for `ms`, collecting what is revealed at which time. */
function run(playout: Playout, clock: ReturnType<typeof fakeClock>, ms: number, out: string[] = []) {
  for (let spent = 0; spent < ms; spent += FRAME) out.push(...playout.tick(clock.advance(FRAME)));
  return out;
}

describe('createPlayout', () => {
  it('runs about 0.6 s behind a steady stream', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    const arrived: { t: number; count: number }[] = [];
    let count = 0;
    const lags: number[] = [];
    for (let t = 0; t < 6000; t += FRAME) {
      if (t % 48 === 0) {
        playout.push('abcdef'); // 6 characters every 48 ms: 125 a second
        count += 6;
        arrived.push({ t, count });
      }
      playout.tick(clock.advance(FRAME));
      if (t > 2000) {
        // When did the newest character on screen arrive?
        const shown = playout.text.length;
        const when = arrived.find((a) => a.count >= shown)!.t;
        lags.push(clock.now() - when);
      }
    }
    const mean = lags.reduce((a, b) => a + b, 0) / lags.length;
    expect(mean).toBeGreaterThan(PLAYOUT_LAG_MS - 100);
    expect(mean).toBeLessThan(PLAYOUT_LAG_MS + 100);
    expect(Math.max(...lags)).toBeLessThan(PLAYOUT_LAG_MS + 150);
  });

  it('is never slower than 40 characters a second while something waits', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    playout.push('x'.repeat(12) + ' '); // a small piece: the pace is the floor, not backlog / lag
    let shown = 0;
    const start = clock.now();
    while (playout.backlog > 0) {
      shown += playout.tick(clock.advance(FRAME)).length;
      // From the first frame on, at least 40 a second (one character of rounding).
      expect(shown).toBeGreaterThanOrEqual(((clock.now() - start) / 1000) * PLAYOUT_MIN_CHARS_PER_SECOND - 1);
    }
    // 12 characters at 40 a second take 300 ms; the floor leaves no room to dawdle.
    expect(clock.now() - start).toBeLessThanOrEqual(300 + FRAME);
  });

  it('eases the speed toward its target over about 300 ms', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    run(playout, clock, 200);
    playout.push('y'.repeat(600)); // a sentence released at once
    playout.tick(clock.advance(FRAME));
    // Right after the burst the speed is far below what the backlog asks for...
    expect(playout.speed).toBeLessThan(playout.targetSpeed * 0.25);
    const speeds: number[] = [];
    const ratios: number[] = [];
    for (let t = FRAME; t <= 320; t += FRAME) {
      playout.tick(clock.advance(FRAME));
      speeds.push(playout.speed);
      ratios.push(playout.speed / playout.targetSpeed);
    }
    // ...it rises frame after frame, still short of the target after 100 ms...
    for (let i = 1; i < 6; i++) expect(speeds[i]).toBeGreaterThan(speeds[i - 1]);
    expect(ratios[5]).toBeLessThan(0.9);
    // ...and has caught up after about 300 ms.
    expect(ratios.at(-1)).toBeGreaterThan(0.9);
  });

  it('never splits a grapheme cluster, whatever the pieces', () => {
    const text =
      'Xin chào! Tiếng Việt có dấu: người, đường, nghiêng. ' +
      'Tiếng Việt tổ hợp: người'.normalize('NFD') +
      ' — emoji 👩🏽‍💻 👨‍👩‍👧‍👦 👍🏿 🇻🇳 1️⃣.';
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    const revealed: string[] = [];
    for (let i = 0; i < text.length; i++) {
      playout.push(text[i]); // one UTF-16 code unit at a time: splits surrogates and marks
      revealed.push(...playout.tick(clock.advance(5)));
    }
    playout.finish();
    while (!playout.done) revealed.push(...playout.tick(clock.advance(FRAME)));
    expect(revealed).toEqual(splitGraphemes(text));
    expect(playout.text).toBe(text);
  });

  it('holds the last cluster back until it is known to be complete', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    playout.push('ok 👍');
    run(playout, clock, 1000);
    expect(playout.text).toBe('ok '); // a skin tone may follow the thumb
    playout.push('🏿');
    playout.finish();
    run(playout, clock, 1000);
    expect(playout.text).toBe('ok 👍🏿');
  });

  it('plays the remainder out after finish instead of jumping to the end', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    const text = 'word '.repeat(100);
    playout.push(text);
    playout.finish();
    const first = playout.tick(clock.advance(FRAME));
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(20);
    let frames = 1;
    while (!playout.done) {
      playout.tick(clock.advance(FRAME));
      frames++;
    }
    expect(playout.text).toBe(text);
    expect(frames * FRAME).toBeGreaterThan(300);
    expect(frames * FRAME).toBeLessThan(5000);
  });

  it('shows everything at once on flush (reduced motion)', () => {
    const clock = fakeClock();
    const playout = createPlayout({ now: clock.now });
    playout.push('Tiếng Việt 👩🏽‍💻');
    expect(playout.flush().join('')).toBe('Tiếng Việt '); // the emoji may still grow
    playout.finish();
    expect(playout.flush().join('')).toBe('👩🏽‍💻');
    expect(playout.done).toBe(true);
  });
});
