import { Inject, Injectable, Logger } from '@nestjs/common';
import type { TurnPromptInput } from '@portal/dal';
import { isCompactionDue, type AssembledPrompt } from '@portal/prompt';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

export interface GateReport {
  /** The projected input of the call about to be made. */
  projectedTokens: number;
  /** It reaches the model's share (`compactAt`, else COMPACT_AT) of the context window. */
  due: boolean;
}

/**
 * The seam of SPEC 5.1 inside the agent loop, which the compaction issue fills: before each call
 * it may compact when `due` (the turn then goes on from the summary and its tail), and after the
 * provider reports a context overflow it may compact and ask for the call again. For now it only
 * reports the projection, and an overflow fails the turn.
 */
@Injectable()
export class CompactionGate {
  private readonly logger = new Logger(CompactionGate.name);

  constructor(@Inject(CONFIG) private readonly config: TurnOrchestratorConfig) {}

  async beforeCall(input: TurnPromptInput, prompt: AssembledPrompt): Promise<GateReport> {
    const limits = {
      ...this.config.limits,
      COMPACT_AT: input.model.compactAt ?? this.config.limits.COMPACT_AT,
    };
    const due = isCompactionDue(prompt.totalTokens, input.model.contextWindow, limits);
    if (due) {
      this.logger.warn(
        `turn ${input.turn.id}: projected ${prompt.totalTokens} tokens reach the compaction threshold of ${input.model.id}`,
      );
    }
    return { projectedTokens: prompt.totalTokens, due };
  }

  /** `retry` once a summary has made room; until compaction exists the turn fails. */
  async onOverflow(_input: TurnPromptInput): Promise<{ retry: false; error: string }> {
    return { retry: false, error: 'context_overflow' };
  }
}
