import { randomUUID } from 'node:crypto';
import { QueueEvents } from 'bullmq';
import { QueueName, type JobData } from '@portal/contracts';
import type { CompactionBlock, OrgId, TurnId } from '@portal/domain';
import { JobRecord, queueKeyPrefix, type BullMqClient } from '@portal/queue';
import type { RedisConnections } from '@portal/redis';
import { lastValueFrom } from 'rxjs';
import { BlockRepository, type Db } from '@portal/dal';
import { compactionBlockId, compactionJobId } from './compaction-ids.util';

export interface CompactionClientOptions {
  redis: RedisConnections;
  /** PORTAL_PREFIX. */
  prefix: string;
  /** How long `compact` waits for the worker, retries included. Default 5 minutes. */
  timeoutMs?: number;
}

/** An AUTO compaction did not produce a summary; `reason` says why. */
export class CompactionError extends Error {
  override name = 'CompactionError';

  constructor(
    readonly turnId: TurnId,
    readonly reason: string,
  ) {
    super(`Compaction of turn ${turnId} failed: ${reason}`);
  }
}

/**
 * What the orchestrator's compaction gate calls for an AUTO compaction (SPEC 5.1): enqueues
 * `compact` AUTO for the running turn and waits for the compaction-worker, which appends the
 * compaction block to the turn. Returns that block (re-read from Postgres), or throws
 * CompactionError. One instance per process; `close()` on shutdown.
 */
export class CompactionClient {
  private events: Promise<QueueEvents> | null = null;

  constructor(
    private readonly db: Db,
    private readonly queues: BullMqClient,
    private readonly options: CompactionClientOptions,
  ) {}

  /**
   * `requestId` names the compaction (letters, digits, `_`, `-`): asking again with the same id
   * (e.g. a retried orchestrator job) gets the same job and the same block, never a second one.
   * `signal` stops the wait (the worker may still write its block).
   */
  async compact(
    orgId: OrgId,
    turnId: TurnId,
    opts: { requestId?: string; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<CompactionBlock> {
    const requestId = opts.requestId ?? randomUUID();
    const data: JobData<'compact'> = { orgId, turnId, trigger: 'AUTO', requestId };
    const timeoutMs = opts.timeoutMs ?? this.options.timeoutMs ?? 5 * 60_000;
    const fail = (why: string) => new CompactionError(turnId, why);
    try {
      const queueEvents = await this.queueEvents();
      const job = await lastValueFrom(
        this.queues.emit(
          QueueName.Compactions,
          new JobRecord(data, { jobId: compactionJobId(turnId, requestId) }),
        ),
      );
      try {
        await untilAborted(job.waitUntilFinished(queueEvents, timeoutMs), opts.signal);
      } catch (err) {
        // So that asking again with the same id runs again. A job still running cannot be
        // removed and may yet write its block, which the turn then holds where it was written.
        await job.remove().catch(() => undefined);
        throw err;
      }
    } catch (err) {
      throw fail((err as Error).message);
    }
    const found = await new BlockRepository(this.db).getBlock(orgId, compactionBlockId(turnId, requestId));
    if (found?.block.kind !== 'compaction') throw fail('the worker finished without a compaction block');
    return found.block;
  }

  async close(): Promise<void> {
    const events = this.events;
    this.events = null;
    if (!events) return;
    const queueEvents = await events.catch(() => null);
    await queueEvents?.close();
  }

  private queueEvents(): Promise<QueueEvents> {
    if (!this.events) {
      this.events = (async () => {
        const queueEvents = new QueueEvents(QueueName.Compactions, {
          // QueueEvents blocks on its connection (XREAD BLOCK).
          connection: this.options.redis.dedicated('queue'),
          prefix: queueKeyPrefix(this.options.prefix, QueueName.Compactions),
        });
        queueEvents.on('error', () => undefined); // ioredis reconnects; a wait times out meanwhile
        await queueEvents.waitUntilReady();
        return queueEvents;
      })();
      this.events.catch(() => (this.events = null));
    }
    return this.events;
  }
}

/** `work`, or a rejection as soon as `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('the wait was aborted'));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
