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
loadTokenizer(); // every compaction counts tokens: not on the first one's time

void bootWorker({
  name: 'compaction-worker',
  module: AppModule.forRoot(config),
  queues: [QueueName.Compactions],
  healthPort: config.healthPort,
  shutdownDeadlineMs: config.shutdownDeadlineMs,
  logLevel: config.logLevel,
  ready: (app) => async () => ({ database: await isDatabaseReady(app.get(DataSource)) }),
});
