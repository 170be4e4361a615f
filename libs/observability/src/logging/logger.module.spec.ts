import { Writable } from 'node:stream';
import { Controller, Get, Logger, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger as NestPino } from 'nestjs-pino';
import { withLogger } from './logger.module';
import { addLogContext, createLogger, runWithLogContext } from './logger.util';

const KEY = 'pk_test_never_logged';

@Controller('turns')
class TurnsController {
  private readonly logger = new Logger('Turns');

  @Get(':id')
  async get(@Param('id') id: string) {
    addLogContext({ turnId: id });
    await new Promise((resolve) => setTimeout(resolve, 1));
    this.logger.log('read');
    return { id };
  }
}

@Module({ controllers: [TurnsController] })
class TurnsModule {}

// nestjs-pino keeps one root logger per process: one app for the whole file.
const lines: Record<string, any>[] = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    lines.push(
      ...String(chunk)
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    );
    done();
  },
});
let app: NestFastifyApplication;
let url: string;

beforeAll(async () => {
  const log = createLogger({ name: 'test-app', level: 'debug', destination });
  app = await NestFactory.create<NestFastifyApplication>(withLogger(TurnsModule, log), new FastifyAdapter(), {
    bufferLogs: true,
  });
  app.useLogger(app.get(NestPino));
  // As the gateway does (recordRequests): each request in a log context of its own.
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', (request, _reply, done) => runWithLogContext({ reqId: request.id }, () => done()));
  await app.listen(0, '127.0.0.1');
  url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
});
afterAll(async () => {
  await app?.close();
  Logger.overrideLogger(false);
});

describe('withLogger', () => {
  it("turns Nest's `new Logger(context)` calls into JSON lines with the context, Nest's own included", async () => {
    const logger = new Logger('TurnRunner');
    logger.log('started');
    logger.warn('lease lost');
    logger.error('broke', 'Error: broke\n    at here');
    logger.log({ msg: 'run-turn completed', durationMs: 5, apiKey: KEY });
    await runWithLogContext({ turnId: 't-1' }, async () => logger.log('inside a job'));
    expect(lines.filter((line) => line.context === 'TurnRunner')).toEqual([
      expect.objectContaining({ level: 'info', name: 'test-app', msg: 'started' }),
      expect.objectContaining({ level: 'warn', msg: 'lease lost' }),
      // The (message, stack) contract of Nest's exception handlers: the stack as an error's.
      expect.objectContaining({
        level: 'error',
        err: expect.objectContaining({ stack: 'Error: broke\n    at here' }),
      }),
      expect.objectContaining({ msg: 'run-turn completed', durationMs: 5, apiKey: '[redacted]' }),
      expect.objectContaining({ msg: 'inside a job', turnId: 't-1' }),
    ]);
    expect(lines.some((line) => line.context === 'RoutesResolver')).toBe(true);
  });

  it("writes no line of its own per request; a handler's lines carry its request's context", async () => {
    const res = await fetch(`${url}/turns/t-9`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const read = lines.find((line) => line.context === 'Turns');
    expect(read).toMatchObject({ msg: 'read', turnId: 't-9', reqId: expect.any(String) });
    expect(lines.filter((line) => line.reqId !== undefined)).toEqual([read]);
    expect(JSON.stringify(lines)).not.toContain(KEY);
  });
});
