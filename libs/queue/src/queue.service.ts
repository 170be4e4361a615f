import { Queue, Worker, type Job as BullJob } from 'bullmq';
import IORedis, { type Redis } from 'ioredis';
import { JOB_QUEUE, QueueName, type JobData, type JobName } from '@portal/contracts';
import { JOB_OPTIONS, WORKER_OPTIONS, queueKeyPrefix } from './job-options';
import type { JobContext } from './job-handler.decorator';

export interface QueueConnectionOptions {
  redisUrl: string;
  prefix: string;
}

export type JobProcessor = (name: JobName, data: unknown, context: JobContext) => Promise<void>;

/** BullMQ behind one small service: producers for every queue, consumers for the ones asked. */
export class QueueService {
  private readonly connection: Redis;
  private readonly queues = new Map<QueueName, Queue>();
  private readonly workers: Worker[] = [];
  private readonly workerConnections: Redis[] = [];
  private readonly shutdown = new AbortController();

  constructor(private readonly options: QueueConnectionOptions) {
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
        (job: BullJob) =>
          process(job.name as JobName, job.data, {
            jobId: job.id ?? '',
            attemptsMade: job.attemptsMade,
            signal: this.shutdown.signal,
          }),
        {
          connection,
          prefix: queueKeyPrefix(this.options.prefix, name),
          ...WORKER_OPTIONS[name],
        },
      );
      worker.on('error', () => undefined); // connection errors are retried by ioredis; health reports them
      this.workers.push(worker);
    }
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
