import { Logger, type DynamicModule, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { QueueName } from '@portal/contracts';
import { QueueService } from './queue.service';
import { WorkerHost } from './queue.module';
import { startHealthServer, type ReadinessCheck } from './health.server';

export interface WorkerBootOptions {
  name: string;
  module: Type<unknown> | DynamicModule;
  queues: QueueName[];
  healthPort: number;
  /** Extra readiness checks beyond Redis (e.g. the database). */
  ready: (app: INestApplicationContext) => ReadinessCheck;
  /** How long SIGTERM waits for running jobs before the process exits anyway. */
  shutdownDeadlineMs?: number;
}

/** Boots a queue worker: Nest context, health port, handler discovery, graceful SIGTERM. */
export async function bootWorker(options: WorkerBootOptions): Promise<INestApplicationContext> {
  const logger = new Logger(options.name);
  const app = await NestFactory.createApplicationContext(options.module, { bufferLogs: false });
  const queues = app.get(QueueService);
  const appReady = options.ready(app);
  const health = await startHealthServer(options.healthPort, async () => ({
    redis: await queues.ping(),
    ...(await appReady()),
  }));
  app.get(WorkerHost).start(options.queues);
  logger.log(`consuming ${options.queues.join(', ')}; health on :${options.healthPort}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: no new jobs; handing back running ones`);
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, options.shutdownDeadlineMs ?? 25_000);
    deadline.unref();
    await queues.close();
    await app.close();
    health.close();
    process.exit(0);
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
