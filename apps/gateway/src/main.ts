import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { configOrExit } from '@portal/queue';
import { AppModule } from './app.module';
import { readConfig } from './config';

async function main() {
  const config = configOrExit(() => readConfig(process.env));
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config),
    new FastifyAdapter(),
  );
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
}

void main();
