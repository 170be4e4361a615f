import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { QueueName, type JobData, readRedisUrl } from '@portal/contracts';
import { RedisModule } from '@portal/redis';
import {
  JobHandler,
  QueueModule,
  METRIC,
  PortalMetrics,
  QueueService,
  RetryLaterError,
  WorkerHost,
  type JobContext,
  type JobHandlerOf,
  queueKeyPrefix,
} from './index';

const redisUrl = readRedisUrl(process.env);

function received() {
  let resolve!: (data: JobData<'run-turn'>) => void;
  const promise = new Promise<JobData<'run-turn'>>((r) => (resolve = r));
  return { promise, resolve };
}
const seen = received();

@JobHandler('run-turn')
@Injectable()
class RunTurnHandler implements JobHandlerOf<'run-turn'> {
  async handle(data: JobData<'run-turn'>): Promise<void> {
    seen.resolve(data);
  }
}

@JobHandler('run-turn')
@Injectable()
class SecondRunTurnHandler implements JobHandlerOf<'run-turn'> {
  async handle(): Promise<void> {}
}

/** Asks to be run again 200 ms later the first time, then finishes. */
const runs: { at: number; attemptsMade: number }[] = [];
@JobHandler('run-turn')
@Injectable()
class BusyOnceHandler implements JobHandlerOf<'run-turn'> {
  async handle(_data: JobData<'run-turn'>, context: JobContext): Promise<void> {
    runs.push({ at: Date.now(), attemptsMade: context.attemptsMade });
    if (runs.length === 1) throw new RetryLaterError(200, 'busy');
  }
}

/** Records the turn ids it is handed. */
const handled: string[] = [];
@JobHandler('run-turn')
@Injectable()
class RecordingHandler implements JobHandlerOf<'run-turn'> {
  async handle(data: JobData<'run-turn'>): Promise<void> {
    handled.push(data.turnId);
  }
}

async function boot(prefix: string, handlers: Array<new (...args: never[]) => unknown>) {
  @Module({
    imports: [RedisModule.forRoot({ url: redisUrl }), QueueModule.forRoot({ prefix })],
    providers: handlers,
  })
  class TestModule {}
  return NestFactory.createApplicationContext(TestModule, { logger: false });
}

describe('QueueService with the real Redis', () => {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const redis = new IORedis(redisUrl);

  afterAll(async () => {
    const keys = await redis.keys(`{${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('carries a job from producer to its one handler, under the prefixed, hash-tagged keys', async () => {
    const app = await boot(prefix, [RunTurnHandler]);
    try {
      app.get(WorkerHost).start([QueueName.Turns]);
      await app.get(QueueService).enqueue('run-turn', { orgId: 'acme', turnId: 't-1' });
      await expect(seen.promise).resolves.toEqual({ orgId: 'acme', turnId: 't-1' });
      const keys = await redis.keys(`${queueKeyPrefix(prefix, QueueName.Turns)}:turns:*`);
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      await app.get(QueueService).close();
      await app.close();
    }
  });

  it('runs a job that asked to retry later again after its delay, without spending an attempt', async () => {
    const app = await boot(`${prefix}-later`, [BusyOnceHandler]);
    try {
      app.get(WorkerHost).start([QueueName.Turns]);
      await app.get(QueueService).enqueue('run-turn', { orgId: 'acme', turnId: 't-2' });
      for (let i = 0; i < 100 && runs.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(runs.map((r) => r.attemptsMade)).toEqual([0, 0]);
      expect(runs[1].at - runs[0].at).toBeGreaterThanOrEqual(150);
    } finally {
      await app.get(QueueService).close();
      await app.close();
      const keys = await redis.keys(`{${prefix}-later:*`);
      if (keys.length) await redis.del(...keys);
    }
  });

  it('counts a job whose worker died holding it as stalled, and hands it to a live worker', async () => {
    const stalledPrefix = `${prefix}-stalled`;
    const app = await boot(stalledPrefix, [RecordingHandler]);
    const connection = new IORedis(redisUrl, { maxRetriesPerRequest: null });
    // A worker that takes the job, never renews its lock and is then gone, as after a SIGKILL.
    const dying = new Worker(QueueName.Turns, () => new Promise<void>(() => undefined), {
      connection,
      prefix: queueKeyPrefix(stalledPrefix, QueueName.Turns),
      lockDuration: 1_000,
      skipLockRenewal: true,
      skipStalledCheck: true,
    });
    try {
      await app.get(QueueService).enqueue('run-turn', { orgId: 'acme', turnId: 't-stalled' });
      await new Promise<void>((resolve) => dying.once('active', () => resolve()));
      await dying.close(true);
      app.get(WorkerHost).start([QueueName.Turns]);
      for (let i = 0; i < 300 && !handled.includes('t-stalled'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(handled).toEqual(['t-stalled']);
      const text = await app.get(PortalMetrics).registry.metrics();
      expect(text).toContain(`${METRIC.jobsStalled}{queue="turns"} 1`);
    } finally {
      connection.disconnect();
      await app.get(QueueService).close();
      await app.close();
      const keys = await redis.keys(`{${stalledPrefix}:*`);
      if (keys.length) await redis.del(...keys);
    }
  });

  it('refuses to start when a consumed job has no handler', async () => {
    const app = await boot(prefix, []);
    try {
      expect(() => app.get(WorkerHost).start([QueueName.Turns])).toThrow(
        'Job "run-turn" needs exactly one handler, found 0 (none)',
      );
    } finally {
      await app.get(QueueService).close();
      await app.close();
    }
  });

  it('refuses to start when a job has two handlers', async () => {
    const app = await boot(prefix, [RunTurnHandler, SecondRunTurnHandler]);
    try {
      expect(() => app.get(WorkerHost).start([QueueName.Turns])).toThrow(
        'Job "run-turn" needs exactly one handler, found 2 (RunTurnHandler, SecondRunTurnHandler)',
      );
    } finally {
      await app.get(QueueService).close();
      await app.close();
    }
  });
});
