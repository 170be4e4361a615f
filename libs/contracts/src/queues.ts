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
  | { queue: QueueName.Turns; name: 'run-turn'; data: { orgId: string; turnId: string } }
  | { queue: QueueName.Attachments; name: 'ingest-attachment'; data: { orgId: string; attachmentId: string } }
  | {
      queue: QueueName.Compactions;
      name: 'compact';
      data: { orgId: string; turnId: string; trigger: 'AUTO' | 'MANUAL'; requestId: string };
    };

export type JobName = Job['name'];
export type JobOf<N extends JobName> = Extract<Job, { name: N }>;
export type JobData<N extends JobName> = JobOf<N>['data'];

export const JOB_QUEUE: { [N in JobName]: JobOf<N>['queue'] } = {
  'run-turn': QueueName.Turns,
  'ingest-attachment': QueueName.Attachments,
  compact: QueueName.Compactions,
};
