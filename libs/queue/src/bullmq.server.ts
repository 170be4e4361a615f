import { Logger } from '@nestjs/common';
import {
  Server,
  type CustomTransportStrategy,
  type MessageHandler,
  type ReadPacket,
} from '@nestjs/microservices';
import { DelayedError, Worker, type Job } from 'bullmq';
import { disconnectClient, type RedisClient } from '@portal/redis';
import { isObservable, lastValueFrom } from 'rxjs';
import type { QueueName } from '@portal/contracts';
import { queueTelemetry, runWithLogContext } from '@portal/observability';
import { BullMqContext } from './bullmq.context';
import { WORKER_OPTIONS, queueKeyPrefix, type QueueConnectionOptions } from './job-options';
import type { PortalMetrics } from '@portal/observability';

export interface BullMqServerOptions extends QueueConnectionOptions {
  /** The queues this worker consumes: each needs exactly one `@EventPattern` handler. */
  queues: QueueName[];
}

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

export class HandlerDiscoveryError extends Error {}

type Outcome = 'completed' | 'failed' | 'handed_back' | 'delayed';

/** BullMQ worker events by name (`failed`, `completed`, …), as `on` forwards them. */
type WorkerEvents = Record<string, (...args: never[]) => void>;

/**
 * The BullMQ transport of `@nestjs/microservices`: one BullMQ worker per consumed queue, each job
 * handed to the queue's `@EventPattern(QueueName.X)` handler with a BullMqContext. With `metrics`,
 * jobs record `portal_job_wait_seconds`, `portal_job_duration_seconds` and stalls.
 */
export class BullMqServer extends Server<WorkerEvents> implements CustomTransportStrategy {
  // handleEvent awaits the handler, so its failure reaches BullMQ (which retries or fails the job).
  override readonly propagatesEventHandlerErrors = true;
  protected override readonly logger = new Logger('Queue');
  private readonly workers: Worker[] = [];
  private readonly connections: RedisClient[] = [];
  private readonly shutdown = new AbortController();
  private readonly listeners: Array<[string, WorkerEvents[string]]> = [];
  /** While tracing is on, each job's handler runs in the trace of whoever added the job (bullmq-otel). */
  private readonly telemetry = queueTelemetry();

  constructor(
    private readonly options: BullMqServerOptions,
    private readonly metrics?: PortalMetrics,
  ) {
    super();
  }

  /** Checks the handlers (exactly one per consumed queue), then starts consuming. */
  listen(callback: (err?: unknown) => void): void {
    try {
      this.checkHandlers();
    } catch (err) {
      return callback(err);
    }
    for (const queue of this.options.queues) {
      const connection = this.options.redis.dedicated('queue');
      this.connections.push(connection);
      const worker = new Worker(queue, (job: Job, token?: string) => this.attempt(queue, job, token), {
        connection,
        prefix: queueKeyPrefix(this.options.prefix, queue),
        ...WORKER_OPTIONS[queue],
        telemetry: this.telemetry,
      });
      worker.on('error', () => undefined); // connection errors are retried by ioredis; health reports them
      worker.on('stalled', () => this.metrics?.jobsStalled.inc({ queue }));
      for (const [event, callback] of this.listeners) worker.on(event as 'failed', callback as never);
      this.workers.push(worker);
    }
    callback();
  }

  /** Stops taking jobs, asks running handlers to hand back their work, waits for them. */
  async close(): Promise<void> {
    this.shutdown.abort();
    await Promise.all(this.workers.map((worker) => worker.close()));
    await Promise.all(this.connections.map(disconnectClient));
  }

  /** Listens to an event of every BullMQ worker (`failed`, `completed`, `stalled`, …). */
  on<
    EventKey extends keyof WorkerEvents = keyof WorkerEvents,
    EventCallback extends WorkerEvents[EventKey] = WorkerEvents[EventKey],
  >(event: EventKey, callback: EventCallback): void {
    this.listeners.push([event, callback]);
    for (const worker of this.workers) worker.on(event as 'failed', callback as never);
  }

  unwrap<T>(): T {
    return this.workers as T;
  }

  /**
   * As Nest's, but settles when the handler has: BullMQ completes, retries or fails the job by it.
   * The processing hooks (tracing) wrap the run as they do for every transport.
   */
  override handleEvent(pattern: string, packet: ReadPacket, context: BullMqContext): Promise<void> {
    const handler = this.getHandlerByPattern(pattern);
    if (!handler) return Promise.reject(new Error(`No handler for queue "${pattern}"`));
    return new Promise<void>((resolve, reject) => {
      this.runWithProcessingHooks(context, async (runEndHook) => {
        try {
          const resultOrStream = await handler(packet.data, context);
          if (isObservable(resultOrStream)) await lastValueFrom(resultOrStream, { defaultValue: undefined });
          resolve();
        } catch (err) {
          reject(err);
        } finally {
          runEndHook();
        }
      });
    });
  }

  /**
   * A queue's name is its route, as its handler was registered: Nest's own would first parse it as
   * JSON, which throws for every job (as Nest's Kafka and MQTT servers, the transport maps it).
   */
  protected override getRouteFromPattern(pattern: string): string {
    return pattern;
  }

  private checkHandlers(): void {
    const consumed = new Set<string>(this.options.queues);
    for (const pattern of this.messageHandlers.keys()) {
      if (!consumed.has(pattern)) {
        throw new HandlerDiscoveryError(
          `A handler listens to "${pattern}", which this worker does not consume (${this.options.queues.join(', ')})`,
        );
      }
    }
    for (const queue of this.options.queues) {
      const handler = this.messageHandlers.get(queue);
      if (handler && !handler.isEventHandler) {
        throw new HandlerDiscoveryError(`Queue "${queue}" carries events: its handler needs @EventPattern`);
      }
      const count = chainLength(handler);
      if (count !== 1) {
        throw new HandlerDiscoveryError(
          `Queue "${queue}" needs exactly one @EventPattern handler, found ${count}`,
        );
      }
    }
  }

  /**
   * One attempt of a job: its ids on every log line logged while it runs, its wait and duration
   * measured, one line when it ends.
   */
  private attempt(queue: QueueName, job: Job, token?: string): Promise<void> {
    const { orgId, turnId, attachmentId } = job.data as Partial<Record<string, string>>;
    return runWithLogContext({ queue, jobId: job.id, orgId, turnId, attachmentId }, async () => {
      const started = Date.now();
      if (job.attemptsMade === 0) {
        const waitedMs = (job.processedOn ?? started) - job.timestamp - (job.opts.delay ?? 0);
        this.metrics?.jobWait.observe({ queue }, Math.max(0, waitedMs) / 1000);
      }
      let outcome: Outcome = 'completed';
      let error: string | undefined;
      try {
        const context = new BullMqContext([job, this.shutdown.signal, token]);
        await this.handleEvent(queue, { pattern: queue, data: job.data }, context);
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
}

/** Nest chains a second event handler of one pattern behind the first (`next`). */
function chainLength(handler: MessageHandler | undefined): number {
  let count = 0;
  for (let h = handler; h; h = h.next) count++;
  return count;
}
