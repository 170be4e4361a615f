import { bootTracing } from '@portal/observability/tracing';

// main.ts imports this first: the instrumentations wrap http, pg, ioredis and pino only if the
// SDK starts before they are loaded (hence the subpath, which loads none of them).
bootTracing(process.env, 'turn-orchestrator');
