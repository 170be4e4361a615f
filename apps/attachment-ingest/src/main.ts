import './tracing';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { QueueName } from '@portal/contracts';
import { isDatabaseReady } from '@portal/dal';
import { bootWorker, configOrExit } from '@portal/queue';
import { AppModule } from './app.module';
import { readConfig } from './config';

const config = configOrExit(() => readConfig(process.env));

void bootWorker({
  name: 'attachment-ingest',
  module: AppModule.forRoot(config),
  queues: [QueueName.Attachments],
  healthPort: config.healthPort,
  shutdownDeadlineMs: config.shutdownDeadlineMs,
  logLevel: config.logLevel,
  ready: (app) => async () => ({ database: await isDatabaseReady(app.get(DataSource)) }),
});
