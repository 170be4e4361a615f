import type { PortalEvent } from '@portal/contracts';
import type { Block, BlockKind, TurnStatus } from '@portal/domain';
import type { Effort, MessageView, TurnView } from './api';

/**
 * The conversation as the screen knows it: the transcript loaded from the API, then the events of
 * the stream applied on top. Pure (no DOM), so the rules that keep a reload or a dropped network
 * from losing or doubling anything are unit-tested:
 * - an event id is applied once;
 * - a block is known by its id: a delta for a block already finished is old news, a
 *   `block_finished` replaces the block's data (a request gets its answer that way);
 * - state only moves forward: a finished block never goes back to streaming, an answered request
 *   never back to pending, a settled turn never back to running.
 */

export interface BlockModel {
  id: string;
  kind: BlockKind;
  turnId: string;
  /** The finished block; null while it streams. */
  block: Block | null;
  /** Streamed text so far (text and thinking), for a block still streaming. */
  streamed: string;
}

export interface MessageModel {
  /** Stable across a reconcile with the API when the message had an id. */
  key: string;
  id: string | null;
  turnId: string;
  role: 'user' | 'assistant';
  attachmentIds: string[];
  blocks: BlockModel[];
}

export interface TurnModel {
  id: string;
  n: number;
  kind: 'turn' | 'compaction';
  status: TurnStatus;
  effort: Effort | null;
  error: string | null;
  /** Between `compaction_started` and `compaction_finished`. */
  compacting: boolean;
}

export type Change =
  | { type: 'structure' }
  | { type: 'delta'; block: BlockModel; text: string }
  | { type: 'block'; block: BlockModel }
  | { type: 'turn'; turn: TurnModel; settled: boolean };

/** The events of a turn: every kind but those that belong to no turn. */
type TurnEvent = Exclude<PortalEvent, { turnId?: undefined }>;
const TURN_EVENTS = new Set<string>([
  'turn_started',
  'turn_state',
  'turn_finished',
  'compaction_started',
  'compaction_finished',
  'block_started',
  'text_delta',
  'thinking_delta',
  'block_finished',
  'usage',
] satisfies TurnEvent['type'][]);

const OPEN: readonly TurnStatus[] = ['queued', 'running', 'paused'];
export const isOpen = (status: TurnStatus): boolean => OPEN.includes(status);
const rank = (status: TurnStatus): number => (status === 'queued' ? 0 : isOpen(status) ? 1 : 2);

function seqOf(b: BlockModel): number {
  return b.block?.seq ?? Number.MAX_SAFE_INTEGER;
}

/** A request's answer, or null while pending: the only thing about a finished block that changes. */
function answered(block: Block | null): boolean {
  if (block?.kind === 'clarification_request') return block.answer !== null;
  if (block?.kind === 'approval_request') return block.approved !== null;
  return false;
}

/** A user's text: the opening message of a turn (seq 1, docs/turn-protocol.md) or a steering one. */
function isUserBlock(block: Block): boolean {
  return block.kind === 'text' && (block.steering || block.seq === 1);
}

export class Transcript {
  messages: MessageModel[] = [];
  readonly turns = new Map<string, TurnModel>();
  private readonly blocks = new Map<string, BlockModel>();
  private readonly seen = new Set<string>();
  private liveKeys = 0;

  constructor(messages: MessageView[], turns: TurnView[]) {
    for (const turn of turns) this.addTurn(turn);
    this.merge(messages, []);
  }

  block(id: string): BlockModel | undefined {
    return this.blocks.get(id);
  }

  /** Turns in order (by number). */
  turnList(): TurnModel[] {
    return [...this.turns.values()].sort((a, b) => a.n - b.n);
  }

  /** The turn that is queued, running or paused, if any. */
  openTurn(): TurnModel | null {
    return this.turnList().find((t) => isOpen(t.status)) ?? null;
  }

  latestTurn(): TurnModel | null {
    return this.turnList().at(-1) ?? null;
  }

  messagesOf(turnId: string): MessageModel[] {
    return this.messages.filter((m) => m.turnId === turnId);
  }

  /**
   * Applies one event of the stream; the same id twice does nothing the second time. Events that
   * belong to no turn (an attachment's progress) and kinds this client does not know change nothing.
   */
  apply(eventId: string, event: PortalEvent): Change[] {
    if (this.seen.has(eventId)) return [];
    this.seen.add(eventId);
    if (!event.turnId || !TURN_EVENTS.has(event.type)) return [];
    const isNew = !this.turns.has(event.turnId);
    const turn = this.ensureTurn(event.turnId);
    const changes = this.applyTo(turn, event);
    return isNew ? [{ type: 'turn', turn, settled: false }, ...changes] : changes;
  }

  private applyTo(turn: TurnModel, event: TurnEvent): Change[] {
    switch (event.type) {
      case 'turn_started':
        return [];
      case 'turn_state':
        return this.setStatus(turn, event.status, null);
      case 'turn_finished':
        turn.compacting = false;
        return this.setStatus(turn, event.status, event.error ?? null);
      case 'compaction_started':
        if (turn.compacting || !isOpen(turn.status)) return [];
        turn.compacting = true;
        return [{ type: 'turn', turn, settled: false }];
      case 'compaction_finished': {
        turn.compacting = false;
        return [{ type: 'turn', turn, settled: false }, ...this.finish(turn.id, event.block)];
      }
      case 'block_started': {
        if (this.blocks.has(event.blockId)) return [];
        this.place(this.newBlock(event.blockId, event.kind, turn.id), 'assistant');
        return [{ type: 'structure' }];
      }
      case 'text_delta':
      case 'thinking_delta': {
        let block = this.blocks.get(event.blockId);
        const changes: Change[] = [];
        if (!block) {
          // Its start came before this client was listening: what came before is in the block
          // when it finishes.
          block = this.newBlock(event.blockId, event.type === 'text_delta' ? 'text' : 'thinking', turn.id);
          this.place(block, 'assistant');
          changes.push({ type: 'structure' });
        }
        if (block.block) return changes;
        block.streamed += event.text;
        changes.push({ type: 'delta', block, text: event.text });
        return changes;
      }
      case 'block_finished':
        return this.finish(turn.id, event.block);
      case 'usage':
        return [];
    }
  }

  /**
   * Folds in a transcript freshly loaded from the API (after a turn settles, or on reconnecting).
   * The API is the truth for what it holds; what this client has that the API did not have yet
   * (a block still streaming, one that finished after the API answered) is kept.
   */
  merge(messages: MessageView[], turns: TurnView[]): Change[] {
    for (const turn of turns) this.addTurn(turn);
    const known = new Set<string>();
    const next: MessageModel[] = [];
    const changes: Change[] = [];
    for (const view of messages) {
      const message: MessageModel = {
        key: view.id,
        id: view.id,
        turnId: view.turnId,
        role: view.role,
        attachmentIds: view.attachmentIds ?? [],
        blocks: [],
      };
      this.ensureTurn(view.turnId);
      for (const data of view.blocks) {
        known.add(data.id);
        const existing = this.blocks.get(data.id);
        const block = existing ?? this.newBlock(data.id, data.kind, view.turnId);
        const newer = block.block === null || (answered(data) && !answered(block.block));
        if (newer) block.block = data;
        // A block this client saw stream, or saw pending, that the API shows finished or answered.
        if (existing && newer) changes.push({ type: 'block', block });
        message.blocks.push(block);
      }
      next.push(message);
    }
    const leftOver = this.messages.flatMap((m) =>
      m.blocks.filter((b) => !known.has(b.id)).map((b) => ({ block: b, role: m.role })),
    );
    this.messages = next;
    for (const { block, role } of leftOver) this.place(block, role);
    return [...changes, { type: 'structure' }];
  }

  private addTurn(view: TurnView): void {
    const turn = this.turns.get(view.id);
    if (!turn) {
      this.turns.set(view.id, {
        id: view.id,
        n: view.n,
        kind: view.kind,
        status: view.status,
        effort: view.effort,
        // The conversation's turns carry no error: `turn_finished` brings it.
        error: null,
        compacting: false,
      });
      return;
    }
    turn.n = view.n;
    turn.kind = view.kind;
    turn.effort = view.effort ?? turn.effort;
    if (rank(view.status) > rank(turn.status)) turn.status = view.status;
    if (!isOpen(turn.status)) turn.compacting = false;
  }

  private ensureTurn(turnId: string): TurnModel {
    let turn = this.turns.get(turnId);
    if (!turn) {
      const n = Math.max(0, ...[...this.turns.values()].map((t) => t.n)) + 1;
      turn = { id: turnId, n, kind: 'turn', status: 'queued', effort: null, error: null, compacting: false };
      this.turns.set(turnId, turn);
    }
    return turn;
  }

  private setStatus(turn: TurnModel, status: TurnStatus, error: string | null): Change[] {
    // Settled is final; between running and paused the stream's order is the truth.
    if (!isOpen(turn.status) || rank(status) < rank(turn.status)) return [];
    if (turn.status === status && error === null) return [];
    turn.status = status;
    if (error !== null) turn.error = error;
    if (!isOpen(status)) turn.compacting = false;
    return [{ type: 'turn', turn, settled: !isOpen(status) }];
  }

  private finish(turnId: string, data: Block): Change[] {
    const block = this.blocks.get(data.id);
    if (block) {
      if (answered(block.block) && !answered(data)) return [];
      const wasLive = block.block === null;
      block.block = data;
      const message = this.messages.find((m) => m.blocks.includes(block));
      if (message && wasLive) message.blocks.sort((a, b) => seqOf(a) - seqOf(b));
      return [{ type: 'block', block }];
    }
    const created = this.newBlock(data.id, data.kind, turnId);
    created.block = data;
    this.place(created, isUserBlock(data) ? 'user' : 'assistant');
    return [{ type: 'structure' }];
  }

  private newBlock(id: string, kind: BlockKind, turnId: string): BlockModel {
    const block: BlockModel = { id, kind, turnId, block: null, streamed: '' };
    this.blocks.set(id, block);
    return block;
  }

  /**
   * Where a block the API has not shown yet goes: a user's text opens a user message of its own;
   * anything else joins the turn's last message when that is the assistant's, or opens one after
   * it. Within a message blocks keep their order (seq; a streaming one stays last).
   */
  private place(block: BlockModel, role: 'user' | 'assistant'): void {
    const ofTurn = this.messagesOf(block.turnId);
    const last = ofTurn.at(-1);
    if (role === 'assistant' && last?.role === 'assistant') {
      last.blocks.push(block);
      last.blocks.sort((a, b) => seqOf(a) - seqOf(b));
      return;
    }
    const message: MessageModel = {
      key: `live-${++this.liveKeys}`,
      id: null,
      turnId: block.turnId,
      role,
      attachmentIds: [],
      blocks: [block],
    };
    const at = last ? this.messages.indexOf(last) + 1 : this.insertionPointFor(block.turnId);
    this.messages.splice(at, 0, message);
  }

  /** A turn without messages yet: after every message of an earlier turn. */
  private insertionPointFor(turnId: string): number {
    const n = this.turns.get(turnId)?.n ?? Number.MAX_SAFE_INTEGER;
    const i = this.messages.findIndex((m) => (this.turns.get(m.turnId)?.n ?? 0) > n);
    return i < 0 ? this.messages.length : i;
  }
}
