import { createPlayout, type Playout } from '@portal/render';
import { h, prefersReducedMotion } from './dom';

/**
 * A text block while it streams (SPEC 9, "Live text"): the playout of `@portal/render` decides
 * what to show and when; this draws it. Each word is a span that resolves from a blur, the caret
 * breathes while more is coming, and once everything has played out the block becomes plain text.
 */
export class LiveText {
  private readonly playout: Playout;
  private readonly caret = h('span', { class: 'caret', 'aria-hidden': 'true' });
  private word: Text | null = null;
  private space: Text | null = null;
  private pushed = '';
  private finalText: string | null = null;
  private settled = false;

  constructor(
    readonly el: HTMLElement,
    private readonly onSettled: () => void,
  ) {
    this.playout = createPlayout({ now: () => performance.now() });
    el.classList.add('live');
    el.setAttribute('aria-busy', 'true');
    el.replaceChildren(this.caret);
    ticker.add(this);
  }

  push(text: string, catchUp = false): void {
    this.pushed += text;
    this.playout.push(text);
    // What was already on screen before a reload comes back at once, not played out again.
    if (catchUp) this.draw(this.playout.flush());
  }

  /** The block finished with `text` (the whole of it, which may hold more than was streamed). */
  finish(text: string): void {
    if (this.finalText !== null) return;
    this.finalText = text;
    if (text.startsWith(this.pushed)) this.playout.push(text.slice(this.pushed.length));
    else this.playout.flush(); // it started before this client listened: show the whole at once
    this.playout.finish();
    if (!text.startsWith(this.pushed)) this.settle();
  }

  /** One frame. Returns false once settled. */
  frame(now: number): boolean {
    if (this.settled) return false;
    this.draw(prefersReducedMotion() ? this.playout.flush() : this.playout.tick(now));
    if (this.playout.done) this.settle();
    return !this.settled;
  }

  settle(): void {
    if (this.settled) return;
    this.settled = true;
    ticker.delete(this);
    this.el.classList.remove('live');
    this.el.removeAttribute('aria-busy');
    this.el.replaceChildren(document.createTextNode(this.finalText ?? this.playout.text));
    this.onSettled();
  }

  private draw(clusters: string[]): void {
    for (const cluster of clusters) {
      if (/^\s+$/u.test(cluster)) {
        this.word = null;
        if (!this.space) {
          this.space = document.createTextNode('');
          this.el.insertBefore(this.space, this.caret);
        }
        this.space.appendData(cluster);
        continue;
      }
      this.space = null;
      if (!this.word) {
        this.word = document.createTextNode('');
        this.el.insertBefore(h('span', { class: 'w' }, this.word), this.caret);
      }
      this.word.appendData(cluster);
    }
  }
}

/** One animation frame loop for every live block on the page, running only while one plays. */
const ticker = (() => {
  const live = new Set<LiveText>();
  let scheduled = false;
  const loop = (now: number) => {
    scheduled = false;
    for (const text of [...live]) if (!text.frame(now)) live.delete(text);
    if (live.size > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(loop);
  };
  return {
    add(text: LiveText) {
      live.add(text);
      schedule();
    },
    delete(text: LiveText) {
      live.delete(text);
    },
  };
})();
