import { DiscoveryService } from '@nestjs/core';
import type { JobData, JobName } from '@portal/contracts';

/** Marks a provider as the handler of one job name. Found at boot by the worker host. */
export const JobHandler = DiscoveryService.createDecorator<JobName>();

export interface JobContext {
  jobId: string;
  attemptsMade: number;
  /** Aborted when the worker is shutting down: the handler hands its work back. */
  signal: AbortSignal;
}

export interface JobHandlerOf<N extends JobName> {
  handle(data: JobData<N>, context: JobContext): Promise<void>;
}

export class HandlerDiscoveryError extends Error {}

/** Exactly one handler per job name this worker consumes; zero or two stop the boot. */
export function pickHandlers<H>(
  jobNames: readonly JobName[],
  found: ReadonlyArray<{ jobName: JobName; handler: H; className: string }>,
): Map<JobName, H> {
  const picked = new Map<JobName, H>();
  for (const jobName of jobNames) {
    const matches = found.filter((f) => f.jobName === jobName);
    if (matches.length !== 1) {
      const names = matches.map((m) => m.className).join(', ') || 'none';
      throw new HandlerDiscoveryError(
        `Job "${jobName}" needs exactly one handler, found ${matches.length} (${names})`,
      );
    }
    picked.set(jobName, matches[0].handler);
  }
  return picked;
}
