import { Inject, Injectable, Logger } from '@nestjs/common';
import { CompactionClient, CompactionError, type TurnPromptInput } from '@portal/application';
import { isCompactionDue, type AssembledPrompt } from '@portal/prompt';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import type { HeldTurn } from './turn-store.service';
import { countCalls } from './turn-steps.util';

/**
 * AUTO compaction inside the agent loop (SPEC 5.1). The compaction-worker writes the summary into
 * the running turn (and publishes its events); the turn then goes on from the summary and its tail,
 * so the caller re-assembles the prompt. Each compaction is named by its trigger and the index of
 * the call it is for, so a turn run again gets the block it already has instead of a second one.
 */
@Injectable()
export class CompactionGate {
  private readonly logger = new Logger(CompactionGate.name);

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(CompactionClient) private readonly client: CompactionClient,
  ) {}

  /**
   * Before a call: compacts when the projected input reaches the model's share (`compactAt`, else
   * COMPACT_AT) of its context window. True when it did (re-assemble). A summary that fails is
   * logged and the call goes ahead as assembled.
   */
  async beforeCall(
    held: HeldTurn,
    input: TurnPromptInput,
    prompt: AssembledPrompt,
    signal: AbortSignal,
  ): Promise<boolean> {
    const limits = {
      ...this.config.limits,
      COMPACT_AT: input.model.compactAt ?? this.config.limits.COMPACT_AT,
    };
    if (!isCompactionDue(prompt.totalTokens, input.model.contextWindow, limits)) return false;
    const failed = await this.compact(held, input, 'auto', signal);
    if (failed === null) return true;
    this.logger.warn(`turn ${held.turn.id}: ${failed}; the call goes ahead without a summary`);
    return false;
  }

  /** After the model reported a context overflow: null once compacted (re-assemble), else the turn's error. */
  onOverflow(held: HeldTurn, input: TurnPromptInput, signal: AbortSignal): Promise<string | null> {
    return this.compact(held, input, 'overflow', signal);
  }

  /** Null when the summary is in the turn; `compaction_failed: <why>` when not. Throws once aborted. */
  private async compact(
    held: HeldTurn,
    input: TurnPromptInput,
    trigger: 'auto' | 'overflow',
    signal: AbortSignal,
  ): Promise<string | null> {
    const requestId = `${trigger}-${countCalls(input.messages) + 1}`;
    // The compaction worker publishes its own events: the turn's `running` goes before them.
    await held.running;
    try {
      await this.client.compact(held.orgId, held.turn.id, { requestId, signal });
      return null;
    } catch (err) {
      if (signal.aborted) throw err;
      const why = err instanceof CompactionError ? err.reason : (err as Error).message;
      return `compaction_failed: ${why}`;
    }
  }
}
