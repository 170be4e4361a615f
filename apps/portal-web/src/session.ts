import type { PortalEvent } from '@portal/contracts';
import { DEFAULT_LIMITS } from '@portal/prompt';
import type { Api, ConversationView as ConversationDto, ModelView } from './api';
import { Composer } from './composer';
import { ContextMeter } from './context-meter';
import { ConversationView } from './conversation-view';
import { h } from './dom';
import { EventStream } from './sse';
import { isOpen, Transcript, type TurnModel } from './transcript';

export interface SessionHooks {
  announce(text: string): void;
  /** A turn settled (titles may change: the list refreshes). */
  onSettled(): void;
  onFatal(status: number): void;
  /** The event stream is up (true) or lost and being tried again (false). */
  onConnection(up: boolean): void;
}

/**
 * Where a reload picks the stream up again: an event id from before the open turn's first event,
 * so the replay brings back what that turn streamed. Kept per conversation in localStorage.
 */
interface Anchor {
  turnId: string;
  eventId: string;
}
const anchorKey = (conversationId: string) => `portal.anchor.${conversationId}`;

function loadAnchor(conversationId: string): Anchor | null {
  try {
    return JSON.parse(localStorage.getItem(anchorKey(conversationId)) ?? 'null') as Anchor | null;
  } catch {
    return null;
  }
}

const OPEN_WAIT_MS = 3000;

/**
 * One open conversation: the stream is opened first and its events held back while the transcript
 * loads, then applied on top of it, so nothing that happens in between is lost; with an anchor of
 * the running turn, the stream replays that turn from its start, so a reload loses nothing it
 * showed. The transcript's rules make sure nothing shows twice.
 */
export class ConversationSession {
  readonly el = h('section', { class: 'conversation' });
  private stream: EventStream | null = null;
  private transcript: Transcript | null = null;
  private view: ConversationView | null = null;
  private composer: Composer | null = null;
  private meter: ContextMeter | null = null;
  private models: ModelView[] = [];
  private buffer: [string, PortalEvent][] | null = [];
  private anchor: Anchor | null;
  private lastId: string | undefined;
  private closed = false;
  private opens = 0;
  private reconcileTimer = 0;
  private unfollow: () => void = () => undefined;

  constructor(
    private readonly api: Api,
    readonly conversationId: string,
    /** The turn a first message has just started here, if that is what opened the conversation. */
    private readonly sentTurnId: string | undefined,
    private readonly hooks: SessionHooks,
  ) {
    this.anchor = loadAnchor(conversationId);
  }

  async open(): Promise<ConversationDto> {
    const api = this.api;
    const conversation = await api.conversation(this.conversationId);
    const [agent, skills, models] = await Promise.all([
      api.agent(conversation.agentId),
      api.skills().catch(() => []),
      api.models().catch(() => []),
    ]);
    if (this.closed) return conversation;
    this.models = models;

    const latest = conversation.turns.at(-1);
    // Turns the person waits for: one they just started, one running as they opened the page.
    const awaited = [this.sentTurnId, latest && isOpen(latest.status) ? latest.id : undefined];
    const resumeFrom =
      this.anchor && latest && this.anchor.turnId === latest.id && isOpen(latest.status)
        ? this.anchor.eventId
        : undefined;
    if (!resumeFrom) this.setAnchor(null);
    this.lastId = resumeFrom;

    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    this.stream = new EventStream({
      url: `/v1/conversations/${encodeURIComponent(this.conversationId)}/events`,
      authorization: api.authorization,
      lastEventId: resumeFrom,
      onEvent: (id, data) => this.onEvent(id, data as PortalEvent),
      onOpen: () => {
        opened();
        this.hooks.onConnection(true);
        // After a dropped connection the replay brings back what was missed; the API's transcript
        // is folded in too, in case the replay no longer holds all of it.
        if (++this.opens > 1) this.scheduleReconcile(0);
      },
      onFatal: (status) => this.hooks.onFatal(status),
      onDown: () => this.hooks.onConnection(false),
    });
    this.stream.start();
    await Promise.race([open, new Promise((r) => setTimeout(r, OPEN_WAIT_MS))]);
    // Turns read again with the transcript, after the stream opened: a turn that settled in between
    // (the first one, opening with its conversation) must not stay running on the screen.
    const [current, messages] = await Promise.all([
      api.conversation(this.conversationId),
      api.messages(this.conversationId),
    ]);
    if (this.closed) return conversation;

    const transcript = new Transcript(messages, current.turns);
    this.transcript = transcript;
    const model = models.find((m) => m.id === agent.model);
    this.composer = new Composer({
      api,
      conversationId: this.conversationId,
      agent,
      model: { id: agent.model, sees: model ? model.vision !== null : true },
      skills,
      reasons: model?.reasoning ?? true,
      effort: agent.effort,
      openTurn: () => transcript.openTurn(),
    });
    this.view = new ConversationView(transcript, {
      api,
      announce: (text) => this.hooks.announce(text),
      onTurn: (turn, settled) => this.onTurn(turn, settled),
      onUsage: () => this.showContext(),
    });
    this.meter = new ContextMeter();
    const scroller = h('div', { class: 'scroller' }, this.view.el);
    this.el.replaceChildren(scroller, h('div', { class: 'composer-dock' }, this.meter.el, this.composer.el));
    this.showContext();
    this.followBottom(scroller);

    // What arrived while the transcript loaded, on top of it, at once.
    const buffered = this.buffer ?? [];
    this.buffer = null;
    this.view.catchUp = true;
    for (const [id, event] of buffered) this.process(id, event);
    this.view.catchUp = false;
    // One that settled while the transcript loaded is said now; later ones as they settle.
    for (const turnId of new Set(awaited)) {
      const turn = turnId ? transcript.turns.get(turnId) : undefined;
      if (turn && !isOpen(turn.status)) this.view.announceSettled(turn);
    }
    // What was buffered may be counted in the transcript too (a usage row): the API's sums win.
    if (buffered.length > 0) this.scheduleReconcile(0);
    this.composer.update();
    return conversation;
  }

  focus(): void {
    this.composer?.focus();
  }

  /**
   * Keeps the newest line in view while the reader is at the bottom (text playing out, blocks
   * arriving); a reader who scrolled up to read stays where they are until they come back down.
   */
  private followBottom(scroller: HTMLElement): void {
    let pinned = true;
    const toBottom = () => {
      scroller.scrollTop = scroller.scrollHeight;
    };
    scroller.addEventListener('scroll', () => {
      pinned = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
    });
    const observer = new ResizeObserver(() => {
      if (pinned) toBottom();
    });
    observer.observe(this.view!.el);
    this.composer!.el.addEventListener('submit', () => {
      pinned = true;
      toBottom();
    });
    this.unfollow = () => observer.disconnect();
    requestAnimationFrame(toBottom);
  }

  close(): void {
    this.closed = true;
    this.stream?.close();
    this.view?.destroy();
    this.unfollow();
    window.clearTimeout(this.reconcileTimer);
  }

  private onEvent(id: string, event: PortalEvent): void {
    if (this.closed) return;
    if (this.buffer) this.buffer.push([id, event]);
    else this.process(id, event);
  }

  private process(id: string, event: PortalEvent): void {
    const before = this.lastId;
    this.lastId = id;
    if (event.type === 'attachment_progress') {
      this.composer!.attachmentProgress(event.attachment);
      return;
    }
    const changes = this.transcript!.apply(id, event);
    const turn = this.transcript!.turns.get(event.turnId);
    // A call after the turn settled (its title): the API's sums replace what was added up here.
    if (event.type === 'usage' && turn && !isOpen(turn.status)) this.scheduleReconcile(150);
    if (event.type === 'turn_finished' || (turn && !isOpen(turn.status))) {
      if (this.anchor?.turnId === event.turnId) this.setAnchor(null);
    } else if (turn && this.anchor?.turnId !== event.turnId) {
      this.setAnchor({ turnId: event.turnId, eventId: before ?? id });
    }
    this.view!.apply(changes);
  }

  private setAnchor(anchor: Anchor | null): void {
    this.anchor = anchor;
    try {
      if (anchor) localStorage.setItem(anchorKey(this.conversationId), JSON.stringify(anchor));
      else localStorage.removeItem(anchorKey(this.conversationId));
    } catch {
      // storage full or refused: a reload then starts from now
    }
  }

  /** How full the context is: the newest turn that measured it, against its model's window. */
  private showContext(): void {
    const turn = this.transcript
      ?.turnList()
      .filter((t) => t.contextTokens !== null)
      .at(-1);
    const model = this.models.find((m) => m.id === turn?.model);
    if (!turn || !model) return;
    this.meter?.show(turn.contextTokens!, model.contextWindow, model.compactAt ?? DEFAULT_LIMITS.COMPACT_AT);
  }

  private onTurn(_turn: TurnModel, settled: boolean): void {
    this.composer?.update();
    if (settled) {
      this.scheduleReconcile(150);
      this.hooks.onSettled();
    }
  }

  /** Folds the API's transcript in: how the server grouped the turn's messages is the truth. */
  private scheduleReconcile(delayMs: number): void {
    window.clearTimeout(this.reconcileTimer);
    this.reconcileTimer = window.setTimeout(async () => {
      if (!this.transcript || this.closed) return;
      try {
        const [conversation, messages] = await Promise.all([
          this.api.conversation(this.conversationId),
          this.api.messages(this.conversationId),
        ]);
        if (this.closed) return;
        this.view!.apply(this.transcript.merge(messages, conversation.turns));
        this.composer?.update();
        this.showContext();
      } catch {
        // the next settle or reconnection tries again
      }
    }, delayMs);
  }
}
