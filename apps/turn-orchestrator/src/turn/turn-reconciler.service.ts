import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { QueueName } from '@portal/contracts';
import { TurnRepository } from '@portal/dal';
import { QueueService } from '@portal/queue';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

/** Stranded turns looked at per round. */
const BATCH = 100;
/** Jobs of the turns queue read per round to tell which turns have one (live jobs are few). */
const LIVE_JOBS_SCANNED = 10_000;

/**
 * Turn protocol 8: every RECONCILE_INTERVAL_MS, re-enqueues turns that are `queued`, or `running`
 * with a lapsed or released lease, and have no waiting, delayed or active job (Redis lost its
 * data, or a job ran out of attempts). Idempotent: a turn gets one recovery job at a time, and a
 * job for a turn someone runs does nothing.
 */
@Injectable()
export class TurnReconciler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TurnReconciler.name);
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(QueueService) private readonly queues: QueueService,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.reconcileIntervalMs <= 0) return;
    this.timer = setInterval(() => void this.round(), this.config.reconcileIntervalMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /**
   * One round; returns the ids of the turns it enqueued. `idleMs`: how long a turn must have been
   * left alone (default one interval), so a turn the gateway is enqueuing right now is not raced.
   */
  async reconcile(opts: { idleMs?: number } = {}): Promise<string[]> {
    const stranded = await this.turns.listStranded({
      idleMs: opts.idleMs ?? this.config.reconcileIntervalMs,
      limit: BATCH,
    });
    if (!stranded.length) return [];
    const queue = this.queues.queue(QueueName.Turns);
    const live = await queue.getJobs(
      ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'],
      0,
      LIVE_JOBS_SCANNED - 1,
    );
    const busy = new Set(live.map((job) => (job?.data as { turnId?: string } | undefined)?.turnId));
    const enqueued: string[] = [];
    for (const { orgId, turnId } of stranded) {
      if (busy.has(turnId)) continue;
      const jobId = `run-turn:${turnId}:recover`;
      // A finished job keeps its id (removeOnComplete keeps the last ones): BullMQ would ignore the add.
      const previous = await queue.getJob(jobId);
      if (previous) {
        if (!['completed', 'failed'].includes(await previous.getState())) continue;
        await previous.remove();
      }
      await this.queues.enqueue('run-turn', { orgId, turnId }, { jobId });
      enqueued.push(turnId);
    }
    if (enqueued.length)
      this.logger.warn(`re-enqueued ${enqueued.length} stranded turn(s): ${enqueued.join(', ')}`);
    return enqueued;
  }

  private async round(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      await this.reconcile();
    } catch (err) {
      this.logger.warn(`reconcile round failed: ${(err as Error).message}`);
    } finally {
      this.busy = false;
    }
  }
}
