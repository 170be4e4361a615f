import './tracing';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { QueueName } from '@portal/contracts';
import { isDatabaseReady } from '@portal/dal';
import { loadTokenizer } from '@portal/prompt';
import { bootWorker, configOrExit } from '@portal/queue';
import { AppModule } from './app.module';
import { readConfig } from './config';

const config = configOrExit(() => readConfig(process.env));
loadTokenizer(); // every turn counts tokens: not on the first one's time

void bootWorker({
  name: 'turn-orchestrator',
  module: AppModule.forRoot(config),
  queues: [QueueName.Turns],
  healthPort: config.healthPort,
  shutdownDeadlineMs: config.shutdownDeadlineMs,
  logLevel: config.logLevel,
  ready: (app) => async () => ({ database: await isDatabaseReady(app.get(DataSource)) }),
});
