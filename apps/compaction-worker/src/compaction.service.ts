import { Logger } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { QueueName, turnStatusEvents, type JobData, type PortalEvent } from '@portal/contracts';
import { compactionBlockId, compactionLineId } from '@portal/application';
import {
  AgentRepository,
  BlockRepository,
  CompactionRepository,
  ConversationRepository,
  PersonRequestRepository,
  TurnLeaseRepository,
  TurnRepository,
  WindowRepository,
  type Db,
  type KeyedBlock,
  type StoredRequest,
  type UsageRow,
} from '@portal/dal';
import {
  type Block,
  checkTurn,
  type CompactionBlock,
  DomainError,
  isTerminal,
  type OrgId,
  type Turn,
  type TurnTranscript,
} from '@portal/domain';
import {
  classifyModelError,
  findModel,
  priceUsage,
  type ModelClientFactory,
  type ModelEntry,
  type StreamResult,
} from '@portal/model';
import {
  buildCompactionPrompt,
  finishSummary,
  requestsShare,
  summaryRequests,
  TokenCounter,
  type CompactionPrompt,
  type CompactionPromptInput,
  type Limits,
} from '@portal/prompt';
import { addLogContext, inSpan, SPAN } from '@portal/observability';
import { JOB_OPTIONS, type BullMqContext } from '@portal/queue';
import type { ConversationEvents } from '@portal/redis';

export interface CompactionServiceDeps {
  db: Db;
  events: Pick<ConversationEvents, 'publish' | 'publishAll'>;
  models: Pick<ModelClientFactory, 'streamChat'>;
  catalogue: readonly ModelEntry[];
  limits: Limits;
  /** Lease on a manual compaction turn, renewed while the summary is written. Default 30 s. */
  leaseMs?: number;
}

type Summary = Omit<CompactionBlock, 'id' | 'seq'>;
type JobInput = JobData<'compact'>;

/** Turns in the first page of whole turns read backwards (each next page holds twice the last). */
const FIRST_TURNS_PAGE = 64;
/** The fewest requests a page of them asks for. */
const MIN_REQUESTS_PAGE = 64;
/**
 * What a request's entry in the summary prompt takes, in tokens, before any was read: the first
 * page of the person's requests is the requests share over it, so one read fills it most often.
 */
const REQUEST_TOKENS_GUESS = 16;
/** The turns the warning about restored requests names. */
const RESTORED_TURNS_LOGGED = 20;

/**
 * Reads turns backwards from `beforeTurnN` in pages, oldest first, and returns `use` of what was
 * read once a page comes back short or `full` holds for it. Each next page holds twice the last.
 */
async function readBackwards<R>(
  beforeTurnN: number,
  read: (beforeTurnN: number, limit: number) => Promise<TurnTranscript[]>,
  use: (turns: TurnTranscript[]) => R,
  full: (result: R) => boolean,
): Promise<R> {
  let turns: TurnTranscript[] = [];
  for (let limit = FIRST_TURNS_PAGE; ; limit *= 2) {
    const page = await read(turns[0]?.turn.n ?? beforeTurnN, limit);
    turns = [...page, ...turns];
    const result = use(turns);
    if (page.length < limit || full(result)) return result;
  }
}

/**
 * The requests a next page needs to fill what is left of their share, from the tokens per
 * request so far, with a quarter more: a page too short costs one more read, not a wrong prompt.
 */
function requestsPage(asked: { tokens: number; shareLeft: number }, requestsRead: number): number {
  const perRequest = Math.max(1, asked.tokens / requestsRead);
  return Math.ceil((Math.max(0, asked.shareLeft) / perRequest) * 1.25);
}

/**
 * The `compact` job (SPEC 5): the summary call on a separate instance of the turn's model, the
 * compaction block, the usage row (callKey = requestId) and the events. AUTO appends the block to
 * the running turn; MANUAL writes the compaction turn's assistant message (block and the portal's
 * line) and settles the turn. Idempotent: the block's id derives from the request, so a job run
 * twice writes one block and one usage row.
 */
export class CompactionService {
  private readonly logger = new Logger('compaction');
  private readonly leaseMs: number;

  constructor(private readonly deps: CompactionServiceDeps) {
    this.leaseMs = deps.leaseMs ?? 30_000;
  }

  run(data: JobInput, context: BullMqContext): Promise<void> {
    const attributes = { 'portal.compaction.trigger': data.trigger, 'portal.turn_id': data.turnId };
    return inSpan(SPAN.compaction, attributes, async () => {
      const turn = await new TurnRepository(this.deps.db).get(data.orgId, data.turnId);
      if (!turn) throw new UnrecoverableError(`Turn ${data.turnId} not found`);
      addLogContext({ conversationId: turn.conversationId });
      if (data.trigger === 'AUTO') await this.auto(turn, data, context);
      else await this.manual(turn, data, context);
    });
  }

  private async auto(turn: Turn, data: JobInput, context: BullMqContext): Promise<void> {
    if (await this.stored(data)) return;
    if (turn.kind !== 'turn' || turn.status !== 'running') {
      throw new UnrecoverableError(`Turn ${turn.id} is a ${turn.status} ${turn.kind}, not a running turn`);
    }
    await this.publish(turn, { type: 'compaction_started', turnId: turn.id });
    const { summary, usage } = await this.summarise(turn, data, context);
    const block = { ...summary, id: compactionBlockId(turn.id, data.requestId) };
    const result = await this.write(turn, data, [block], usage);
    if (!result)
      throw new UnrecoverableError(`Turn ${turn.id} stopped running before its summary was written`);
    if (result.written) await this.announce(turn, result.blocks, usage);
  }

  private async manual(turn: Turn, data: JobInput, context: BullMqContext): Promise<void> {
    if (turn.kind !== 'compaction') throw new UnrecoverableError(`Turn ${turn.id} is not a compaction turn`);
    if (isTerminal(turn.status)) return;
    const leases = new TurnLeaseRepository(this.deps.db);
    const owner = `compaction-worker:${context.getJob().id}`;
    const claimed = await leases.claim(data.orgId, turn.id, owner, this.leaseMs);
    if (!claimed) return; // another worker has it
    if (claimed.from === 'queued') await this.publishAll(turn, turnStatusEvents(turn.id, 'running'));
    const renew = setInterval(
      () => void leases.renewLease(data.orgId, turn.id, owner, this.leaseMs).catch(() => undefined),
      this.leaseMs / 3,
    );
    try {
      if (!(await this.stored(data))) {
        await this.publish(turn, { type: 'compaction_started', turnId: turn.id });
        const { summary, usage } = await this.summarise(turn, data, context);
        const line: KeyedBlock = {
          id: compactionLineId(turn.id, data.requestId),
          kind: 'text',
          text: `Context summarised: turns 1–${summary.coversTurns.to}.`,
          narration: false,
          steering: false,
        };
        const block = { ...summary, id: compactionBlockId(turn.id, data.requestId) };
        const result = await this.write(turn, data, [block, line], usage);
        if (!result) return; // settled meanwhile (cancelled)
        if (result.written) await this.announce(turn, result.blocks, usage);
      }
      await this.settle(turn, data.orgId);
    } catch (err) {
      const final = err instanceof UnrecoverableError || context.getJob().attemptsMade + 1 >= this.attempts();
      if (final) await this.fail(turn, data.orgId, (err as Error).message);
      throw err;
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * Writes the blocks once, with the usage row, while the turn runs; every block is checked on
   * append (SPEC 8), and a violation fails the job for good, since a run again would break it again.
   */
  private async write(turn: Turn, data: JobInput, blocks: KeyedBlock[], usage: UsageRow | null) {
    try {
      return await new CompactionRepository(this.deps.db).appendOnce(data.orgId, turn.id, blocks, {
        status: 'running',
        usage: usage && { ...usage, callKey: data.requestId },
      });
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'invariant_violated')) throw err;
      throw new UnrecoverableError(`invariant_violated: ${err.message}`);
    }
  }

  /** Whether this request already wrote its compaction block (a job run again). */
  private async stored(data: JobInput): Promise<boolean> {
    const found = await new BlockRepository(this.deps.db).getBlock(
      data.orgId,
      compactionBlockId(data.turnId, data.requestId),
    );
    return found !== null;
  }

  /** The summary call: no tools, the turn's model from the catalogue, the answer checked. */
  private async summarise(
    turn: Turn,
    data: JobInput,
    context: BullMqContext,
  ): Promise<{ summary: Summary; usage: UsageRow | null }> {
    const { db, catalogue, limits } = this.deps;
    const entry = findModel(catalogue, turn.model);
    if (!entry)
      throw new UnrecoverableError(`Model ${turn.model} of turn ${turn.id} is not in the catalogue`);
    const conversation = await new ConversationRepository(db).get(data.orgId, turn.conversationId);
    if (!conversation) throw new UnrecoverableError(`Conversation ${turn.conversationId} not found`);
    const [agent, messages] = await Promise.all([
      new AgentRepository(db).get(data.orgId, conversation.agentId),
      new BlockRepository(db).listTurnMessages(data.orgId, turn.id),
    ]);
    const prompt = await this.prompt(data.orgId, turn, {
      window: { summary: null, turns: [] },
      current: { n: turn.n, messages },
      trigger: data.trigger,
      guidance: agent?.compactionGuidance ?? null,
      contextWindow: entry.contextWindow,
      limits,
      // One per compaction: the prompt is measured again after every page, from the same texts.
      counter: new TokenCounter(),
    });
    const result = await this.call(entry, prompt, context.getSignal());
    if (result.text.trim() === '') throw new Error('The summary call answered with no text');
    const { summary, restored } = finishSummary(result.text, prompt);
    if (restored.length > 0) {
      // The first turns only: a summary that kept none of thousands would log them all.
      const turns = restored.slice(0, RESTORED_TURNS_LOGGED).map((r) => r.turnN);
      const more = restored.length > turns.length ? ', …' : '';
      this.logger.warn(
        `turn ${turn.id}: restored ${restored.length} request(s) the summary left out (turns ${turns.join(', ')}${more})`,
      );
    }
    const usage = result.usage && {
      turnId: turn.id,
      kind: 'compaction' as const,
      model: entry.id,
      ...result.usage,
      cost: priceUsage(entry, result.usage),
    };
    return {
      summary: { kind: 'compaction', summary, trigger: data.trigger, coversTurns: prompt.coversTurns },
      usage,
    };
  }

  /**
   * The summary prompt from a bounded read (SPEC 5.2): the newest summary, the person's requests
   * from turn 1 and the settled turns after the summary, each read backwards in pages until the
   * prompt leaves some of them out or none is left. The prompt fits the model's context window, so
   * what is read follows the window, not the length of the conversation.
   */
  private async prompt(orgId: OrgId, turn: Turn, input: CompactionPromptInput): Promise<CompactionPrompt> {
    const windows = new WindowRepository(this.deps.db);
    const { conversationId } = turn;
    // No turns: the summary alone; the requests do not depend on it.
    const [{ summary }, people] = await Promise.all([
      windows.readWindow(orgId, conversationId, { turnsReplayed: 0, beforeTurnN: turn.n }),
      this.requests(orgId, turn, input),
    ]);
    return readBackwards(
      turn.n,
      // A page that reached the summary's turn is the last: before it, an older summary would answer.
      async (beforeTurnN, limit) =>
        beforeTurnN <= (summary?.turnN ?? 1)
          ? []
          : windows.readTurns(orgId, conversationId, { turnsReplayed: limit, beforeTurnN }),
      (turns) => buildCompactionPrompt({ ...input, window: { summary, turns }, people }),
      (prompt) => prompt.turnsLeftOut !== null,
    );
  }

  /**
   * The person's requests in the settled turns from turn 1, read backwards in pages until the
   * requests share leaves some out or none is left; only those from the newest turn whose requests
   * are left out on, since older ones change nothing. Every summary keeps them all within their
   * share, so a request an earlier summary kept is checked again, and the share bounds the section
   * however many summaries came before.
   */
  private async requests(orgId: OrgId, turn: Turn, input: CompactionPromptInput): Promise<StoredRequest[]> {
    const stored = new PersonRequestRepository(this.deps.db);
    const share = requestsShare(input.contextWindow, input.limits);
    let read: StoredRequest[] = [];
    for (let limit = Math.max(MIN_REQUESTS_PAGE, Math.ceil(share / REQUEST_TOKENS_GUESS)); ;) {
      const before = read[0] ?? { turnN: turn.n, seq: 0 };
      const page = await stored.readBefore(orgId, turn.conversationId, { before, limit });
      read = [...page, ...read];
      const asked = summaryRequests({ ...input, people: read });
      const { leftOut } = asked;
      if (leftOut) return read.filter((r) => r.turnN >= leftOut.to);
      if (page.length < limit) return read;
      limit = Math.max(MIN_REQUESTS_PAGE, Math.min(limit * 2, requestsPage(asked, read.length)));
    }
  }

  private async call(
    entry: ModelEntry,
    prompt: CompactionPrompt,
    signal: AbortSignal,
  ): Promise<StreamResult> {
    try {
      // No `tools` at all: the summary call offers none (an empty list is refused by the API).
      for await (const event of this.deps.models.streamChat(
        entry,
        { messages: prompt.messages },
        { signal },
      )) {
        if (event.type === 'done') return event.result;
      }
      throw new Error('The stream ended without a result');
    } catch (err) {
      const { kind, message } = classifyModelError(err);
      const why = `The summary call to ${entry.id} failed (${kind}): ${message}`;
      throw kind === 'fatal' || kind === 'context_overflow' ? new UnrecoverableError(why) : new Error(why);
    }
  }

  private async announce(turn: Turn, blocks: readonly Block[], usage: UsageRow | null) {
    for (const block of blocks) {
      await this.publish(
        turn,
        block.kind === 'compaction'
          ? { type: 'compaction_finished', turnId: turn.id, block }
          : { type: 'block_finished', turnId: turn.id, block },
      );
    }
    if (usage) {
      const { turnId: _turnId, ...row } = usage;
      await this.publish(turn, { type: 'usage', turnId: turn.id, row });
    }
  }

  /** A manual compaction turn ends `completed` once the six invariants hold. */
  private async settle(turn: Turn, orgId: OrgId): Promise<void> {
    const messages = await new BlockRepository(this.deps.db).listTurnMessages(orgId, turn.id);
    const violations = checkTurn({ turn: { ...turn, status: 'completed' }, messages });
    if (violations.length > 0) {
      throw new UnrecoverableError(`invariant_violated: ${violations.map((v) => v.message).join('; ')}`);
    }
    const settled = await new TurnRepository(this.deps.db).updateStatus(orgId, turn.id, 'completed', {
      from: ['running'],
    });
    if (settled) await this.publishAll(turn, turnStatusEvents(turn.id, 'completed'));
  }

  private async fail(turn: Turn, orgId: OrgId, why: string): Promise<void> {
    const error = why.startsWith('invariant_violated') ? why : `compaction_failed: ${why}`;
    const failed = await new TurnRepository(this.deps.db).updateStatus(orgId, turn.id, 'failed', {
      error,
      from: ['queued', 'running'],
    });
    if (failed) await this.publishAll(turn, turnStatusEvents(turn.id, 'failed', error));
  }

  private attempts(): number {
    return JOB_OPTIONS[QueueName.Compactions].attempts ?? 1;
  }

  private async publish(turn: Turn, event: PortalEvent): Promise<void> {
    await this.deps.events.publish(turn.conversationId, event);
  }

  private async publishAll(turn: Turn, events: PortalEvent[]): Promise<void> {
    await this.deps.events.publishAll(turn.conversationId, events);
  }
}
