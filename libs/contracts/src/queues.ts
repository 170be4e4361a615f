import type { AttachmentId, OrgId, TurnId } from '@portal/domain';
/**
 * Queue names. Never rename one without a migration: jobs already waiting in Redis under the old
 * name would be stranded.
 */
export enum QueueName {
  Turns = 'turns',
  Attachments = 'attachments',
  Compactions = 'compactions',
}

/** Every job of the system. A job carries ids only; its handler re-reads state from Postgres. */
export type Job =
  | { queue: QueueName.Turns; name: 'run-turn'; data: { orgId: OrgId; turnId: TurnId } }
  | {
      queue: QueueName.Attachments;
      name: 'ingest-attachment';
      data: { orgId: OrgId; attachmentId: AttachmentId };
    }
  | {
      queue: QueueName.Compactions;
      name: 'compact';
      data: { orgId: OrgId; turnId: TurnId; trigger: 'AUTO' | 'MANUAL'; requestId: string };
    };

export type JobName = Job['name'];
export type JobOf<N extends JobName> = Extract<Job, { name: N }>;
export type JobData<N extends JobName> = JobOf<N>['data'];

/** The job a queue carries: handlers are `@EventPattern(QueueName.X)` and producers emit to the queue. */
export type QueueJob<Q extends QueueName> = Extract<Job, { queue: Q }>;

/** The BullMQ job name of each queue's job (Bull Board and the logs show it). */
export const QUEUE_JOB: { [Q in QueueName]: QueueJob<Q>['name'] } = {
  [QueueName.Turns]: 'run-turn',
  [QueueName.Attachments]: 'ingest-attachment',
  [QueueName.Compactions]: 'compact',
};
