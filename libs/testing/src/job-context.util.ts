import { Job, type Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { QUEUE_JOB, type QueueName } from '@portal/contracts';
import { BullMqContext } from '@portal/queue';

/**
 * The context the BullMQ transport hands a handler, around a job of `queue` that was never added
 * to it: for tests that call a handler directly, as its attempt `attemptsMade + 1`.
 */
export function jobContext(
  queue: Queue,
  opts: { id?: string; attemptsMade?: number; signal?: AbortSignal } = {},
): BullMqContext {
  const job = new Job(queue, QUEUE_JOB[queue.name as QueueName], {}, {}, opts.id ?? randomUUID());
  job.attemptsMade = opts.attemptsMade ?? 0;
  return new BullMqContext([job, opts.signal ?? new AbortController().signal, undefined]);
}
