import { OrgId, TurnId } from '@portal/domain';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { QueueName, type JobData, readRedisUrl } from '@portal/contracts';
import { METRIC, PortalMetrics } from '@portal/observability';
import { RedisModule } from '@portal/redis';
import {
  BullMqClient,
  BullMqContext,
  createQueueMicroservice,
  JobRecord,
  QueueModule,
  RetryLaterError,
  queueKeyPrefix,
} from './index';

const redisUrl = readRedisUrl(process.env);

function received<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
const seen = received<JobData<'run-turn'>>();

@Controller()
class RunTurnHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() data: JobData<'run-turn'>): Promise<void> {
    seen.resolve(data);
  }
}

@Controller()
class SecondRunTurnHandler {
  @EventPattern(QueueName.Turns)
  async handle(): Promise<void> {}
}

@Controller()
class AnswersTurnsHandler {
  @MessagePattern(QueueName.Turns)
  async handle(): Promise<string> {
    return 'an answer nobody reads';
  }
}

@Controller()
class CompactHandler {
  @EventPattern(QueueName.Compactions)
  async handle(): Promise<void> {}
}

/** Asks to be run again 200 ms later the first time, then finishes. */
const runs: { at: number; attemptsMade: number }[] = [];
@Controller()
class BusyOnceHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() _data: JobData<'run-turn'>, @Ctx() context: BullMqContext): Promise<void> {
    runs.push({ at: Date.now(), attemptsMade: context.getJob().attemptsMade });
    if (runs.length === 1) throw new RetryLaterError(200, 'busy');
  }
}

/** Records the turn ids it is handed. */
const handled: string[] = [];
@Controller()
class RecordingHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() data: JobData<'run-turn'>): Promise<void> {
    handled.push(data.turnId);
  }
}

/** Reports its progress and what its context showed, then finishes. */
const contexts = received<{
  id?: string;
  name: string;
  attemptsMade: number;
  aborted: boolean;
  token?: string;
}>();
@Controller()
class ProgressHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() _data: JobData<'run-turn'>, @Ctx() context: BullMqContext): Promise<void> {
    const job = context.getJob();
    await job.updateProgress(50);
    contexts.resolve({
      id: job.id,
      name: job.name,
      attemptsMade: job.attemptsMade,
      aborted: context.getSignal().aborted,
      token: context.getToken(),
    });
  }
}

/** Works until the worker shuts down, then stops as a turn does (its work goes back to the queue). */
const started = received<void>();
@Controller()
class UntilShutdownHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() _data: JobData<'run-turn'>, @Ctx() context: BullMqContext): Promise<void> {
    started.resolve();
    const signal = context.getSignal();
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    throw new Error('handed back');
  }
}

/** Records the attempts made of the job it is handed. */
const attempts = received<number>();
@Controller()
class AttemptsHandler {
  @EventPattern(QueueName.Turns)
  async handle(@Payload() _data: JobData<'run-turn'>, @Ctx() context: BullMqContext): Promise<void> {
    attempts.resolve(context.getJob().attemptsMade);
  }
}

async function boot(
  prefix: string,
  controllers: Array<new (...args: never[]) => unknown>,
  queues = [QueueName.Turns],
): Promise<INestMicroservice> {
  @Module({ imports: [RedisModule.forRoot({ url: redisUrl }), QueueModule.forRoot({ prefix })], controllers })
  class TestModule {}
  return createQueueMicroservice(TestModule, { queues, logger: false });
}

/** `promise`, or an error naming `stage` once `ms` pass: a slow step says which one it was. */
async function within<T>(stage: string, promise: Promise<T>, ms = 8_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${stage}: not done within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `done` every 50 ms, for up to `ms`. */
async function until(done: () => boolean, ms = 5_000): Promise<void> {
  for (let waited = 0; waited < ms && !done(); waited += 50) await new Promise((r) => setTimeout(r, 50));
}

describe('the BullMQ transport with the real Redis', () => {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const redis = new IORedis(redisUrl);

  afterAll(async () => {
    const keys = await redis.keys(`{${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  /** Runs `test` with a worker app on a prefix of its own, then closes the app. */
  async function withApp(
    name: string,
    controllers: Array<new (...args: never[]) => unknown>,
    test: (app: INestMicroservice, prefix: string) => Promise<void>,
  ): Promise<void> {
    const app = await boot(`${prefix}-${name}`, controllers);
    try {
      await test(app, `${prefix}-${name}`);
    } finally {
      await app.close();
    }
  }

  it('carries an emitted job to its one handler, under the prefixed, hash-tagged keys', () =>
    withApp('carry', [RunTurnHandler], async (app, appPrefix) => {
      await app.listen();
      await lastValueFrom(app.get(BullMqClient).emit(QueueName.Turns, { orgId: 'acme', turnId: 't-1' }));
      await expect(seen.promise).resolves.toEqual({ orgId: 'acme', turnId: 't-1' });
      const keys = await redis.keys(`${queueKeyPrefix(appPrefix, QueueName.Turns)}:turns:*`);
      expect(keys.length).toBeGreaterThan(0);
    }));

  it('gives the handler a context exposing the BullMQ job, its lock and the shutdown signal', () =>
    withApp('context', [ProgressHandler], async (app) => {
      await app.listen();
      const record = new JobRecord(
        { orgId: OrgId('acme'), turnId: TurnId('t-ctx') },
        { jobId: 'run-turn:t-ctx:open' },
      );
      const job = await lastValueFrom(app.get(BullMqClient).emit(QueueName.Turns, record));
      const context = await contexts.promise;
      expect(context).toMatchObject({ id: job.id, name: 'run-turn', attemptsMade: 0, aborted: false });
      expect(context.token).toEqual(expect.any(String));
      const stored = await app.get(BullMqClient).queue(QueueName.Turns).getJob('run-turn:t-ctx:open');
      expect(stored?.progress).toBe(50);
    }));

  it('adds a job once for one job id, however often it is emitted', () =>
    withApp('dedup', [RecordingHandler], async (app) => {
      const client = app.get(BullMqClient);
      const record = new JobRecord(
        { orgId: OrgId('acme'), turnId: TurnId('t-once') },
        { jobId: 'run-turn:t-once:open' },
      );
      await lastValueFrom(client.emit(QueueName.Turns, record));
      await lastValueFrom(client.emit(QueueName.Turns, record));
      expect(await client.queue(QueueName.Turns).getJobCounts('waiting')).toEqual({ waiting: 1 });
      await app.listen();
      await until(() => handled.includes('t-once'));
      await new Promise((r) => setTimeout(r, 200));
      expect(handled.filter((id) => id === 't-once')).toEqual(['t-once']);
    }));

  it('runs a job that asked to retry later again after its delay, without spending an attempt', () =>
    withApp('later', [BusyOnceHandler], async (app) => {
      await app.listen();
      await lastValueFrom(app.get(BullMqClient).emit(QueueName.Turns, { orgId: 'acme', turnId: 't-2' }));
      await until(() => runs.length >= 2);
      expect(runs.map((r) => r.attemptsMade)).toEqual([0, 0]);
      expect(runs[1].at - runs[0].at).toBeGreaterThanOrEqual(150);
    }));

  it('hands a running job back to the queue on close, without spending an attempt', () =>
    withApp('back', [AttemptsHandler], async (next, appPrefix) => {
      const closing = await boot(appPrefix, [UntilShutdownHandler]);
      await closing.listen();
      await lastValueFrom(
        closing.get(BullMqClient).emit(QueueName.Turns, { orgId: 'acme', turnId: 't-back' }),
      );
      await within('the first worker takes the job', started.promise);
      await within('the first worker closes', closing.close());
      await next.listen();
      await expect(within('the second worker takes the job', attempts.promise)).resolves.toBe(0);
    }));

  it('counts a job whose worker died holding it as stalled, and hands it to a live worker', () =>
    withApp('stalled', [RecordingHandler], async (app, appPrefix) => {
      const connection = new IORedis(redisUrl, { maxRetriesPerRequest: null });
      // A worker that takes the job, never renews its lock and is then gone, as after a SIGKILL.
      const dying = new Worker(QueueName.Turns, () => new Promise<void>(() => undefined), {
        connection,
        prefix: queueKeyPrefix(appPrefix, QueueName.Turns),
        lockDuration: 1_000,
        skipLockRenewal: true,
        skipStalledCheck: true,
      });
      try {
        await lastValueFrom(
          app.get(BullMqClient).emit(QueueName.Turns, { orgId: 'acme', turnId: 't-stalled' }),
        );
        await new Promise<void>((resolve) => dying.once('active', () => resolve()));
        await dying.close(true);
        await app.listen();
        await until(() => handled.includes('t-stalled'), 15_000);
        expect(handled.filter((id) => id === 't-stalled')).toEqual(['t-stalled']);
        const text = await app.get(PortalMetrics).registry.metrics();
        expect(text).toContain(`${METRIC.jobsStalled}{queue="turns"} 1`);
      } finally {
        connection.disconnect();
      }
    }));

  it.each([
    ['a consumed queue has no handler', [], 'Queue "turns" needs exactly one @EventPattern handler, found 0'],
    [
      'a queue has two handlers',
      [RunTurnHandler, SecondRunTurnHandler],
      'Queue "turns" needs exactly one @EventPattern handler, found 2',
    ],
    [
      'a queue has a request-response handler',
      [AnswersTurnsHandler],
      'Queue "turns" carries events: its handler needs @EventPattern',
    ],
    [
      'a handler listens to a queue the worker does not consume',
      [RunTurnHandler, CompactHandler],
      'A handler listens to "compactions", which this worker does not consume (turns)',
    ],
  ])('refuses to start when %s', (_case, controllers, message) =>
    withApp('refused', controllers, (app) => expect(app.listen()).rejects.toThrow(message)),
  );
});
