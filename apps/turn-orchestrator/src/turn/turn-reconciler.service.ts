import type { TurnId } from '@portal/domain';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { QueueName } from '@portal/contracts';
import { compactionJobId, MANUAL_REQUEST_ID } from '@portal/application';
import { TurnLeaseRepository, TurnRepository } from '@portal/dal';
import { BullMqClient, JobRecord } from '@portal/queue';
import { lastValueFrom } from 'rxjs';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { TurnRunner } from './turn-runner.service';

/** Stranded turns looked at per round. */
const BATCH = 100;
/** Jobs of a queue read per round to tell which turns have one. */
const LIVE_JOBS_SCANNED = 10_000;

/**
 * Turn protocol 8: every RECONCILE_INTERVAL_MS, re-enqueues turns that are `queued`, `running`
 * with a lapsed or released lease, or `paused` with a cancel request, and have no waiting, delayed
 * or active job (Redis lost its data): `run-turn` for a turn, `compact` MANUAL for a `/compact`
 * turn. A turn whose `run-turn` job ran out of attempts (e.g. its workers died past the stall
 * limit) is cut off instead (SPEC 2). Idempotent: a turn gets one recovery job at a time, and a
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
    @Inject(TurnLeaseRepository) private readonly leases: TurnLeaseRepository,
    @Inject(BullMqClient) private readonly queues: BullMqClient,
    @Inject(TurnRunner) private readonly runner: TurnRunner,
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
    const stranded = await this.leases.listStranded({
      idleMs: opts.idleMs ?? this.config.reconcileIntervalMs,
      limit: BATCH,
    });
    if (!stranded.length) return [];
    const busy = {
      [QueueName.Turns]: await this.liveTurnIds(QueueName.Turns),
      [QueueName.Compactions]: await this.liveTurnIds(QueueName.Compactions),
    };
    const spent = await this.spentTurnJobs();
    const enqueued: string[] = [];
    for (const { orgId, turnId } of stranded) {
      const turn = await this.turns.get(orgId, turnId);
      if (!turn) continue;
      const compaction = turn.kind === 'compaction';
      const queue = compaction ? QueueName.Compactions : QueueName.Turns;
      if (busy[queue].has(turnId)) continue;
      const failedReason = compaction ? undefined : spent.get(turnId);
      if (failedReason !== undefined) {
        await this.runner.outOfAttempts({ orgId, turnId }, failedReason);
        continue;
      }
      const jobId = compaction ? compactionJobId(turnId, MANUAL_REQUEST_ID) : `run-turn:${turnId}:recover`;
      // A finished job keeps its id (removeOnComplete keeps the last ones): BullMQ would ignore the add.
      const previous = await this.queues.queue(queue).getJob(jobId);
      if (previous) {
        if (!['completed', 'failed'].includes(await previous.getState())) continue;
        await previous.remove();
      }
      const job = compaction
        ? this.queues.emit(
            QueueName.Compactions,
            new JobRecord({ orgId, turnId, trigger: 'MANUAL', requestId: MANUAL_REQUEST_ID }, { jobId }),
          )
        : this.queues.emit(QueueName.Turns, new JobRecord({ orgId, turnId }, { jobId }));
      await lastValueFrom(job);
      enqueued.push(turnId);
    }
    if (enqueued.length)
      this.logger.warn(`re-enqueued ${enqueued.length} stranded turn(s): ${enqueued.join(', ')}`);
    return enqueued;
  }

  /** Turns with a `run-turn` job that failed its last attempt, with the job's reason. */
  private async spentTurnJobs(): Promise<Map<string, string>> {
    const failed = await this.queues.queue(QueueName.Turns).getJobs(['failed'], 0, LIVE_JOBS_SCANNED - 1);
    return new Map(
      failed.flatMap((job) => {
        const turnId = (job?.data as { turnId?: TurnId } | undefined)?.turnId;
        return turnId ? [[turnId, job.failedReason || 'the job failed'] as const] : [];
      }),
    );
  }

  /** The turns with a waiting, delayed or active job in `queue` (live jobs are few). */
  private async liveTurnIds(queue: QueueName.Turns | QueueName.Compactions): Promise<Set<string>> {
    const live = await this.queues
      .queue(queue)
      .getJobs(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'], 0, LIVE_JOBS_SCANNED - 1);
    return new Set(live.flatMap((job) => (job?.data as { turnId?: TurnId } | undefined)?.turnId ?? []));
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
