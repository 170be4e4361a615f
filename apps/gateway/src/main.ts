import './tracing';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { configOrExit } from '@portal/queue';
import { readConfig } from './config';
import { createGatewayApp } from './gateway-app.util';

async function main() {
  const config = configOrExit(() => readConfig(process.env));
  const app = await createGatewayApp(config);
  // SIGTERM/SIGINT close the SSE streams, then the server, then queue, Redis and database connections.
  app.enableShutdownHooks();
  // listen() initialises the app first: the bootstrap file is applied before the port opens.
  await app.listen(config.port, config.host);
  new Logger('Gateway').log(`listening on ${config.host}:${config.port}`);
}

main().catch((err: Error) => {
  console.error(`gateway failed to start: ${err.message}`);
  process.exit(1);
});
