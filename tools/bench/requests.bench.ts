import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { buildServices } from './build.util';
import { cpuMs } from './cpu.util';
import { startChild } from './proc.util';
import { median, numberArg as arg, runMain } from './stats.util';

/**
 * `npm run bench:requests`: what one small authenticated request costs the gateway, against the
 * same answer from a bare Fastify server in a process of its own. `GET /v1/me` reads nothing
 * (the caller's principal is cached), so its CPU is the gateway's request pipeline alone: Nest's
 * guard and routing, the key's check and rate limit, the request line, the security headers and
 * the metrics. Rounds alternate the two; each prints the CPU per request of the serving process
 * (/proc) and requests per second, then the medians and their ratio.
 * Options: `--requests=N` per round, `--rounds=N`, `--concurrency=N`.
 */

const REQUESTS = arg('requests', 4000);
const ROUNDS = arg('rounds', 3);
const CONCURRENCY = arg('concurrency', 10);
const WARM_UP = 500;
const API_KEY = 'pk_bench_requests';

interface Figures {
  cpuUsPerRequest: number;
  perSecond: number;
}

async function send(origin: string, count: number): Promise<void> {
  const pool = new Pool(origin, { connections: CONCURRENCY });
  let sent = 0;
  const client = async () => {
    while (sent < count) {
      sent++;
      const res = await pool.request({
        path: '/v1/me',
        method: 'GET',
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET /v1/me answered ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  await pool.close();
}

async function measure(origin: string, pid: number): Promise<Figures> {
  await send(origin, WARM_UP);
  const cpuBefore = cpuMs(pid)!;
  const startedAt = performance.now();
  await send(origin, REQUESTS);
  const elapsedMs = performance.now() - startedAt;
  return {
    cpuUsPerRequest: ((cpuMs(pid)! - cpuBefore) * 1000) / REQUESTS,
    perSecond: (REQUESTS * 1000) / elapsedMs,
  };
}

/** The bare server: the same answer, its one check the key itself. */
async function bare(): Promise<number> {
  const app = Fastify();
  app.get('/v1/me', async (req, reply) => {
    if (req.headers.authorization !== `Bearer ${API_KEY}`) return reply.code(401).send();
    return { userId: 'bencher', orgId: 'bench', role: 'author', via: 'api_key' };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

async function measureBare(): Promise<Figures> {
  const { child, port } = await startChild(__filename, 'bare');
  try {
    return await measure(`http://127.0.0.1:${port}`, child.pid!);
  } finally {
    child.kill('SIGTERM');
  }
}

async function measureGateway(): Promise<Figures> {
  const { e2eModels, startPortal } = await import('@portal/testing');
  const portal = await startPortal({
    // No model is called: the catalogue only has to load.
    models: e2eModels('http://127.0.0.1:9/v1'),
    bootstrap: {
      orgs: [{ id: 'bench', users: [{ id: 'bencher', role: 'author', apiKey: API_KEY }], agents: [] }],
    },
  });
  try {
    return await measure(new URL(portal.baseURL).origin, portal.pid('gateway')!);
  } finally {
    await portal.stop();
  }
}

async function main(): Promise<void> {
  buildServices();
  const rows: { bare: Figures; gateway: Figures }[] = [];
  const show = (f: Figures) =>
    `${f.cpuUsPerRequest.toFixed(0).padStart(6)} µs CPU ${f.perSecond.toFixed(0).padStart(6)} req/s`;
  console.log(`GET /v1/me, ${REQUESTS} requests a round, ${CONCURRENCY} at a time`);
  for (let round = 1; round <= ROUNDS; round++) {
    const row = { bare: await measureBare(), gateway: await measureGateway() };
    rows.push(row);
    console.log(`round ${round}: bare Fastify ${show(row.bare)}   gateway ${show(row.gateway)}`);
  }
  const of = (pick: (r: (typeof rows)[number]) => number) => median(rows.map(pick));
  const bareCpu = of((r) => r.bare.cpuUsPerRequest);
  const gatewayCpu = of((r) => r.gateway.cpuUsPerRequest);
  console.log(
    `median: bare ${bareCpu.toFixed(0)} µs, gateway ${gatewayCpu.toFixed(0)} µs of CPU per request ` +
      `(${(gatewayCpu / bareCpu).toFixed(2)} ×); ${of((r) => r.gateway.perSecond).toFixed(0)} req/s`,
  );
}

if (process.argv[2] === 'bare') {
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
  bare().then((port) => process.send!({ port }));
} else {
  runMain(main);
}
