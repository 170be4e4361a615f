import type { JobsOptions, WorkerOptions } from 'bullmq';
import { QueueName } from '@portal/contracts';
import type { RedisConnections } from '@portal/redis';

/**
 * Job and worker options, in one place. A turn's lock is short so that a worker killed mid-turn
 * is noticed (stalled) and its job handed to another worker within seconds.
 */
export const JOB_OPTIONS: Record<QueueName, JobsOptions> = {
  [QueueName.Turns]: {
    attempts: 5,
    backoff: { type: 'exponential', delay: 500 },
    removeOnComplete: 1000,
    removeOnFail: 5000,
  },
  [QueueName.Attachments]: {
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: 1000,
    removeOnFail: 5000,
  },
  [QueueName.Compactions]: {
    attempts: 3,
    backoff: { type: 'exponential', delay: 500 },
    removeOnComplete: 1000,
    removeOnFail: 5000,
  },
};

export const WORKER_OPTIONS: Record<
  QueueName,
  Pick<WorkerOptions, 'concurrency' | 'lockDuration' | 'stalledInterval' | 'maxStalledCount'>
> = {
  [QueueName.Turns]: { concurrency: 20, lockDuration: 4_000, stalledInterval: 2_000, maxStalledCount: 5 },
  [QueueName.Attachments]: {
    concurrency: 2,
    lockDuration: 30_000,
    stalledInterval: 10_000,
    maxStalledCount: 2,
  },
  [QueueName.Compactions]: {
    concurrency: 5,
    lockDuration: 10_000,
    stalledInterval: 5_000,
    maxStalledCount: 5,
  },
};

/**
 * BullMQ key prefix of a queue. The hash tag `{…}` keeps every key of one queue in one Redis
 * Cluster slot, as BullMQ's Lua scripts require; keys are `{<PORTAL_PREFIX>:<queue>}:<queue>:wait` etc.
 */
export function queueKeyPrefix(portalPrefix: string, queue: QueueName): string {
  return `{${portalPrefix}:${queue}}`;
}

/** Where the queues live: the process's Redis connections and the portal's key prefix (PORTAL_PREFIX). */
export interface QueueConnectionOptions {
  redis: RedisConnections;
  prefix: string;
}

/** The connection options QueueModule was given, for the transport server of a worker. */
export const QUEUE_CONNECTION = Symbol('QUEUE_CONNECTION');
