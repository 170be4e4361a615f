import { bootTracing } from '@portal/observability';

// main.ts imports this first: the instrumentations wrap http, pg, ioredis and pino only if the
// SDK starts before they are loaded.
bootTracing(process.env, 'attachment-ingest');
