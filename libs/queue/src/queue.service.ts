import { Logger } from '@nestjs/common';
import { DelayedError, Queue, Worker, type Job as BullJob } from 'bullmq';
import IORedis, { type Redis } from 'ioredis';
import { JOB_QUEUE, QueueName, type JobData, type JobName } from '@portal/contracts';
import { queueTelemetry } from '@portal/observability';
import { JOB_OPTIONS, WORKER_OPTIONS, queueKeyPrefix } from './job-options';
import type { JobContext } from './job-handler.decorator';
import { runWithLogContext } from './observability/logger.util';
import type { PortalMetrics } from './observability/portal-metrics.service';

export interface QueueConnectionOptions {
  redisUrl: string;
  prefix: string;
}

export type JobProcessor = (name: JobName, data: unknown, context: JobContext) => Promise<void>;

/**
 * Thrown by a handler that cannot do its job yet (e.g. another worker holds the turn): the job is
 * delayed by `delayMs` and runs again then, without spending an attempt.
 */
export class RetryLaterError extends Error {
  override name = 'RetryLaterError';

  constructor(
    readonly delayMs: number,
    message: string,
  ) {
    super(message);
  }
}

/** BullMQ behind one small service: producers for every queue, consumers for the ones asked. */
export class QueueService {
  private readonly connection: Redis;
  private readonly queues = new Map<QueueName, Queue>();
  private readonly workers: Worker[] = [];
  private readonly workerConnections: Redis[] = [];
  private readonly shutdown = new AbortController();
  private readonly logger = new Logger('Queue');
  /** While tracing is on, jobs carry the trace context of whoever added them (bullmq-otel). */
  private readonly telemetry = queueTelemetry();

  /** With `metrics`, consumed jobs record `portal_job_wait_seconds` and `portal_job_duration_seconds`. */
  constructor(
    private readonly options: QueueConnectionOptions,
    private readonly metrics?: PortalMetrics,
  ) {
    this.connection = new IORedis(options.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
  }

  async ping(): Promise<boolean> {
    try {
      if (this.connection.status === 'wait') await this.connection.connect();
      return (await this.connection.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: queueKeyPrefix(this.options.prefix, name),
        defaultJobOptions: JOB_OPTIONS[name],
        telemetry: this.telemetry,
      });
      this.queues.set(name, queue);
    }
    return queue;
  }

  async enqueue<N extends JobName>(
    name: N,
    data: JobData<N>,
    options: { jobId?: string; delay?: number } = {},
  ): Promise<void> {
    await this.queue(JOB_QUEUE[name]).add(name, data, options);
  }

  /** Starts consuming `queues`; each job goes to `process` with its name. */
  consume(queues: QueueName[], process: JobProcessor): void {
    for (const name of queues) {
      const connection = this.connection.duplicate();
      this.workerConnections.push(connection);
      const worker = new Worker(
        name,
        (job: BullJob, token?: string) => this.attempt(name, job, process, token),
        {
          connection,
          prefix: queueKeyPrefix(this.options.prefix, name),
          ...WORKER_OPTIONS[name],
          telemetry: this.telemetry,
        },
      );
      worker.on('error', () => undefined); // connection errors are retried by ioredis; health reports them
      worker.on('stalled', () => this.metrics?.jobsStalled.inc({ queue: name }));
      this.workers.push(worker);
    }
  }

  /**
   * One attempt of a job: its ids on every log line logged while it runs, its wait and duration
   * measured, one line when it ends.
   */
  private attempt(queue: QueueName, job: BullJob, process: JobProcessor, token?: string): Promise<void> {
    const { orgId, turnId, attachmentId } = job.data as Partial<Record<string, string>>;
    return runWithLogContext({ queue, jobId: job.id, orgId, turnId, attachmentId }, async () => {
      const started = Date.now();
      if (job.attemptsMade === 0) {
        const waitedMs = (job.processedOn ?? started) - job.timestamp - (job.opts.delay ?? 0);
        this.metrics?.jobWait.observe({ queue }, Math.max(0, waitedMs) / 1000);
      }
      let outcome: 'completed' | 'failed' | 'handed_back' | 'delayed' = 'completed';
      let error: string | undefined;
      try {
        await process(job.name as JobName, job.data, {
          jobId: job.id ?? '',
          attemptsMade: job.attemptsMade,
          signal: this.shutdown.signal,
        });
      } catch (err) {
        error = (err as Error).message;
        if (err instanceof RetryLaterError) {
          outcome = 'delayed';
          await job.moveToDelayed(Date.now() + err.delayMs, token);
          throw new DelayedError();
        }
        if (!this.shutdown.signal.aborted) {
          outcome = 'failed';
          throw err;
        }
        // Handed back on shutdown: due again at once for another worker, without spending an attempt.
        outcome = 'handed_back';
        await job.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      } finally {
        const durationMs = Date.now() - started;
        this.metrics?.jobDuration.observe({ queue, outcome }, durationMs / 1000);
        const line = {
          msg: `${job.name} ${outcome.replace('_', ' ')}`,
          attempt: job.attemptsMade + 1,
          durationMs,
          error,
        };
        if (outcome === 'failed') this.logger.warn(line);
        else this.logger.log(line);
      }
    });
  }

  /** Stops taking jobs, asks running handlers to hand back their work, waits for them. */
  async close(): Promise<void> {
    this.shutdown.abort();
    await Promise.all(this.workers.map((w) => w.close()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    for (const connection of this.workerConnections) connection.disconnect();
    this.connection.disconnect();
  }
}
