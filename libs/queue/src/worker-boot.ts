import type { DynamicModule, INestMicroservice, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AsyncMicroserviceOptions } from '@nestjs/microservices';
import { Logger } from 'nestjs-pino';
import type { Logger as Pino } from 'pino';
import type { QueueName } from '@portal/contracts';
import {
  collectProcessMetrics,
  createLogger,
  PortalMetrics,
  startHealthServer,
  withLogger,
  type ReadinessCheck,
} from '@portal/observability';
import { BullMqClient } from './bullmq.client';
import { BullMqServer } from './bullmq.server';
import { JobErrorFilter } from './job-error.filter';
import { QUEUE_CONNECTION, type QueueConnectionOptions } from './job-options';

/**
 * A worker as a Nest microservice on the BullMQ transport, consuming `queues` once `listen()` is
 * called. `module` imports QueueModule; its `@EventPattern` handlers are checked at `listen()`.
 * `logger`: a `createLogger` logger, Nest's lines included (nestjs-pino); false: none; default
 * Nest's console.
 */
export async function createQueueMicroservice(
  module: Type<unknown> | DynamicModule,
  options: { queues: QueueName[]; logger?: Pino | false },
): Promise<INestMicroservice> {
  const { logger } = options;
  const app = await NestFactory.createMicroservice<AsyncMicroserviceOptions>(
    logger ? withLogger(module, logger) : module,
    {
      // Nest's lines wait for the JSON logger, which needs the app's injector.
      ...(logger ? { bufferLogs: true } : { logger }),
      inject: [QUEUE_CONNECTION, PortalMetrics],
      useFactory: (connection: QueueConnectionOptions, metrics: PortalMetrics) => ({
        strategy: new BullMqServer({ ...connection, queues: options.queues }, metrics),
      }),
    },
  );
  if (logger) app.useLogger(app.get(Logger));
  app.useGlobalFilters(new JobErrorFilter());
  return app;
}

export interface WorkerBootOptions {
  name: string;
  module: Type<unknown> | DynamicModule;
  queues: QueueName[];
  healthPort: number;
  /** Extra readiness checks beyond Redis (e.g. the database). */
  ready: (app: INestMicroservice) => ReadinessCheck;
  /**
   * SHUTDOWN_DEADLINE_MS: how long SIGTERM waits for running jobs to finish or be handed back before
   * the process exits anyway. The k8s grace period is this plus a margin.
   */
  shutdownDeadlineMs: number;
  /** LOG_LEVEL. */
  logLevel: string;
}

/**
 * Boots a queue worker: the microservice logging JSON, its health and metrics port, graceful
 * SIGTERM.
 */
export async function bootWorker(options: WorkerBootOptions): Promise<INestMicroservice> {
  const deadlineMs = options.shutdownDeadlineMs;
  const log = createLogger({ name: options.name, level: options.logLevel });
  const app = await createQueueMicroservice(options.module, { queues: options.queues, logger: log });
  const client = app.get(BullMqClient);
  const metrics = app.get(PortalMetrics);
  collectProcessMetrics(metrics.registry, `portal_${options.name.replace(/-/g, '_')}_`);
  metrics.watchQueues(options.queues.map((name) => client.queue(name)));
  const appReady = options.ready(app);
  const health = await startHealthServer(
    options.healthPort,
    async () => ({ redis: await client.ping(), ...(await appReady()) }),
    () => metrics.scrape(),
  );
  await app.listen();
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
      // The transport first (running jobs finish or are handed back), then the app's own hooks.
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
