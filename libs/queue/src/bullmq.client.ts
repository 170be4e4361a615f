import type { OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { Queue, type Job, type JobsOptions } from 'bullmq';
import type { RedisClient } from '@portal/redis';
import type { Observable } from 'rxjs';
import { QUEUE_JOB, QueueName, type QueueJob } from '@portal/contracts';
import { queueTelemetry } from '@portal/observability';
import { JOB_OPTIONS, queueKeyPrefix, type QueueConnectionOptions } from './job-options';

/** A job's payload with the options of this one job: its id (for de-duplication) or a delay. */
export class JobRecord<Q extends QueueName = QueueName> {
  constructor(
    readonly data: QueueJob<Q>['data'],
    readonly options: Pick<JobsOptions, 'jobId' | 'delay'> = {},
  ) {}
}

/**
 * The producers' side of the BullMQ transport: `emit(QueueName.X, payload or JobRecord)` adds the
 * queue's job with JOB_OPTIONS and emits the BullMQ job once Redis has it. A job id already in the
 * queue adds nothing (BullMQ's de-duplication). Jobs are events: `send` is refused.
 */
export class BullMqClient extends ClientProxy implements OnApplicationShutdown {
  private readonly connection: RedisClient;
  private readonly queues = new Map<QueueName, Queue>();
  /** While tracing is on, jobs carry the trace context of whoever added them (bullmq-otel). */
  private readonly telemetry = queueTelemetry();

  constructor(private readonly options: QueueConnectionOptions) {
    super();
    // Shared with the process's other queue users; RedisModule closes it.
    this.connection = options.redis.shared('queue');
  }

  /** Typed by the queue's job; the Observable is hot: the job is added whether or not it is awaited. */
  override emit<Q extends QueueName>(queue: Q, job: QueueJob<Q>['data'] | JobRecord<Q>): Observable<Job>;
  override emit<TResult = unknown, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult>;
  override emit(pattern: unknown, data: unknown): Observable<unknown> {
    return super.emit(pattern, data);
  }

  /** BullMQ connects on its first command. */
  async connect(): Promise<void> {}

  async ping(): Promise<boolean> {
    try {
      if (this.connection.status === 'wait') await this.connection.connect();
      return (await this.connection.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /** The BullMQ queue, for what reads it (Bull Board, `portal_queue_jobs`, waiting on a job). */
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

  unwrap<T>(): T {
    return this.connection as T;
  }

  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map((queue) => queue.close()));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  protected async dispatchEvent<T = Job>(packet: ReadPacket<unknown>): Promise<T> {
    const queue = packet.pattern as QueueName;
    if (!Object.values(QueueName).includes(queue)) throw new Error(`No queue is named "${String(queue)}"`);
    const { data, options } =
      packet.data instanceof JobRecord ? packet.data : new JobRecord(packet.data as never);
    return (await this.queue(queue).add(QUEUE_JOB[queue], data, options)) as T;
  }

  protected publish(_packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    callback({ err: new Error('The BullMQ transport carries events: emit them'), isDisposed: true });
    return () => undefined;
  }
}
