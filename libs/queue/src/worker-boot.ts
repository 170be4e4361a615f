import type { DynamicModule, INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { QueueName } from '@portal/contracts';
import { QueueService } from './queue.service';
import { WorkerHost } from './queue.module';
import { startHealthServer, type ReadinessCheck } from './health.server';
import { createLogger } from './observability/logger.util';
import { NestPinoLogger } from './observability/nest-logger.service';
import { PortalMetrics } from './observability/portal-metrics.service';

export interface WorkerBootOptions {
  name: string;
  module: Type<unknown> | DynamicModule;
  queues: QueueName[];
  healthPort: number;
  /** Extra readiness checks beyond Redis (e.g. the database). */
  ready: (app: INestApplicationContext) => ReadinessCheck;
  /**
   * SHUTDOWN_DEADLINE_MS: how long SIGTERM waits for running jobs to finish or be handed back before
   * the process exits anyway. The k8s grace period is this plus a margin.
   */
  shutdownDeadlineMs: number;
  /** LOG_LEVEL. */
  logLevel: string;
}

/**
 * Boots a queue worker: Nest context logging JSON, health and metrics port, handler discovery,
 * graceful SIGTERM.
 */
export async function bootWorker(options: WorkerBootOptions): Promise<INestApplicationContext> {
  const deadlineMs = options.shutdownDeadlineMs;
  const log = createLogger({ name: options.name, level: options.logLevel });
  const app = await NestFactory.createApplicationContext(options.module, {
    logger: new NestPinoLogger(log),
  });
  const queues = app.get(QueueService);
  const metrics = app.get(PortalMetrics);
  metrics.collectDefaults(`portal_${options.name.replace(/-/g, '_')}_`);
  metrics.watchQueues(options.queues.map((name) => queues.queue(name)));
  const appReady = options.ready(app);
  const health = await startHealthServer(
    options.healthPort,
    async () => ({ redis: await queues.ping(), ...(await appReady()) }),
    () => metrics.scrape(),
  );
  app.get(WorkerHost).start(options.queues);
  log.info(`consuming ${options.queues.join(', ')}; health and metrics on :${options.healthPort}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ deadlineMs }, `${signal}: no new jobs; running ones finish or are handed back`);
    const deadline = setTimeout(() => {
      log.error('shutdown deadline passed; exiting with jobs still running');
      process.exit(1);
    }, deadlineMs);
    deadline.unref();
    try {
      await queues.close();
      await app.close();
      health.close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return app;
}

/** Reads the app's config, or prints the problem (naming the variable) and exits. */
export function configOrExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}
