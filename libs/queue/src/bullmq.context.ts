import { BaseRpcContext } from '@nestjs/microservices';
import type { Job } from 'bullmq';

export type BullMqContextArgs = [job: Job, signal: AbortSignal, token: string | undefined];

/** What an `@EventPattern` handler gets beside the payload (`@Ctx()`): the BullMQ job it runs. */
export class BullMqContext extends BaseRpcContext<BullMqContextArgs> {
  /** The job: `id`, `attemptsMade`, `updateProgress`, `moveToDelayed` (with `getToken()`). */
  getJob(): Job {
    return this.args[0];
  }

  /**
   * Aborted when the worker is shutting down: the handler stops and throws, and the transport
   * hands the job back to the queue without spending an attempt.
   */
  getSignal(): AbortSignal {
    return this.args[1];
  }

  /** The worker's lock on the job, which BullMQ asks for to move an active job. */
  getToken(): string | undefined {
    return this.args[2];
  }
}
