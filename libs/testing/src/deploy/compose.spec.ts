import path from 'node:path';
import { parseCatalogue } from '@portal/model';
import {
  APPS,
  defaultPort,
  parseYamlDocs,
  readRepoFile,
  ROOT,
  shutdownDeadlineMs,
  type Doc,
  type Worker,
} from './deploy.util';

const REQUIRED_ENV = [
  'DATABASE_URL',
  'REDIS_URL',
  'PORTAL_PREFIX',
  'PORTAL_MODELS_FILE',
  'PORTAL_BOOTSTRAP_FILE',
];
const seconds = (duration: string | undefined) => {
  const match = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration ?? '');
  return match ? Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0) : 10; // compose's default is 10 s
};

/** What docker/compose.yaml must hold; an empty list means it does. */
function composeProblems(compose: Doc): string[] {
  const problems: string[] = [];
  const services: Doc = compose.services ?? {};
  for (const name of ['redis', 'postgres', 'migrate', ...APPS])
    if (!services[name]) problems.push(`${name}: missing`);

  const redis = services.redis ?? {};
  const command = [redis.command ?? []].flat().join(' ');
  if (!/--appendonly\s+yes\b/.test(command)) problems.push('redis: AOF is off (--appendonly yes)');
  if (!/--maxmemory-policy\s+noeviction\b/.test(command))
    problems.push('redis: BullMQ needs --maxmemory-policy noeviction');
  if (!/^postgres:15(\.|-|$)/.test(services.postgres?.image ?? ''))
    problems.push('postgres: must be Postgres 15');

  for (const [name, service] of Object.entries(services) as [string, Doc][]) {
    if (service.image && !/^[^@]+:(?!latest$)[\w.-]+$/.test(service.image))
      problems.push(`${name}: image ${service.image} is not pinned`);
    if (name === 'migrate') continue;
    const test = service.healthcheck?.test;
    if (!Array.isArray(test) || test.length < 2 || test[0] === 'NONE' || service.healthcheck?.disable) {
      problems.push(`${name}: no health check`);
    }
  }

  const migrate = services.migrate ?? {};
  if ([migrate.command].flat()[0] !== 'migrate') problems.push('migrate: must run the image with "migrate"');
  if (!['no', undefined].includes(migrate.restart))
    problems.push('migrate: a one-shot service must not restart');
  if (migrate.depends_on?.postgres?.condition !== 'service_healthy')
    problems.push('migrate: must wait for a healthy postgres');

  for (const app of APPS) {
    const service = services[app];
    if (!service) continue;
    if ([service.command].flat()[0] !== app) problems.push(`${app}: must run the image with "${app}"`);
    if (service.build?.dockerfile !== 'docker/Dockerfile')
      problems.push(`${app}: must be built from docker/Dockerfile`);
    const wants = {
      migrate: 'service_completed_successfully',
      postgres: 'service_healthy',
      redis: 'service_healthy',
    };
    for (const [dependency, condition] of Object.entries(wants)) {
      if (service.depends_on?.[dependency]?.condition !== condition) {
        problems.push(`${app}: depends_on ${dependency} must be ${condition}`);
      }
    }
    const env: Doc = service.environment ?? {};
    for (const name of REQUIRED_ENV) if (!env[name]) problems.push(`${app}: no ${name}`);
    if (env.DATABASE_URL && new URL(env.DATABASE_URL).hostname !== 'postgres')
      problems.push(`${app}: DATABASE_URL is not the postgres service`);
    if (env.REDIS_URL && new URL(env.REDIS_URL).hostname !== 'redis')
      problems.push(`${app}: REDIS_URL is not the redis service`);
    for (const variable of ['PORTAL_MODELS_FILE', 'PORTAL_BOOTSTRAP_FILE']) {
      const mounted = (service.volumes ?? []).some((v: string) => String(v).split(':')[1] === env[variable]);
      if (!mounted) problems.push(`${app}: ${variable} ${env[variable]} is not a mounted file`);
    }

    const portVar = app === 'gateway' ? 'PORT' : 'HEALTH_PORT';
    const port = Number(env[portVar] ?? defaultPort(app));
    const probe = [service.healthcheck?.test ?? []].flat().join(' ');
    if (!probe.includes(`:${port}/health/ready`))
      problems.push(`${app}: health check does not GET :${port}/health/ready`);
    if (app !== 'gateway') {
      const needed = Math.ceil(shutdownDeadlineMs(app as Worker) / 1000) + 5;
      const grace = seconds(service.stop_grace_period);
      if (grace < needed)
        problems.push(`${app}: stop_grace_period ${grace}s < shutdown deadline + 5 s = ${needed}s`);
    }
  }
  return problems;
}

describe('docker/compose.yaml', () => {
  const text = readRepoFile('docker/compose.yaml');
  const compose = () => parseYamlDocs(text, 'docker/compose.yaml')[0];

  it('has every service, with health checks, dependencies, env and the Redis BullMQ needs', () => {
    expect(composeProblems(compose())).toEqual([]);
  });

  it('mounts a valid model catalogue and a bootstrap file whose agents use it', () => {
    const gateway = compose().services.gateway;
    const source = (target: string) => {
      const volume = gateway.volumes.find((v: string) => v.split(':')[1] === target) as string;
      return path.relative(ROOT, path.resolve(ROOT, 'docker', volume.split(':')[0]));
    };
    const catalogue = parseCatalogue(
      readRepoFile(source(gateway.environment.PORTAL_MODELS_FILE)),
      'models.yaml',
    );
    const bootstrap = parseYamlDocs(
      readRepoFile(source(gateway.environment.PORTAL_BOOTSTRAP_FILE)),
      'bootstrap',
    )[0];
    const agents = bootstrap.orgs.flatMap((org: Doc) => org.agents ?? []);
    expect(agents.length).toBeGreaterThan(0);
    for (const agent of agents) expect(catalogue.map((m) => m.id)).toContain(agent.model);
  });

  describe('fails when broken', () => {
    const cases: [string, (c: Doc) => void, RegExp][] = [
      [
        'Redis without AOF',
        (c) => (c.services.redis.command = ['redis-server', '--maxmemory-policy', 'noeviction']),
        /AOF is off/,
      ],
      [
        'Redis evicting keys',
        (c) => (c.services.redis.command = ['redis-server', '--appendonly', 'yes']),
        /noeviction/,
      ],
      ['Postgres 16', (c) => (c.services.postgres.image = 'postgres:16.4'), /Postgres 15/],
      ['an unpinned image', (c) => (c.services.redis.image = 'redis:latest'), /redis:latest is not pinned/],
      [
        'no health check',
        (c) => delete c.services['attachment-ingest'].healthcheck,
        /attachment-ingest: no health check/,
      ],
      [
        'not waiting for the migration',
        (c) => (c.services.gateway.depends_on.migrate.condition = 'service_started'),
        /gateway: depends_on migrate must be service_completed_successfully/,
      ],
      [
        'a missing env var',
        (c) => delete c.services['turn-orchestrator'].environment.REDIS_URL,
        /turn-orchestrator: no REDIS_URL/,
      ],
      [
        'an unmounted file',
        (c) => (c.services.gateway.volumes = []),
        /PORTAL_MODELS_FILE \/etc\/portal\/models.yaml is not a mounted file/,
      ],
      [
        'a health check on the wrong port',
        (c) => (c.services['compaction-worker'].environment.HEALTH_PORT = '4000'),
        /compaction-worker: health check does not GET :4000/,
      ],
      [
        'a short stop grace period',
        (c) => (c.services['turn-orchestrator'].stop_grace_period = '10s'),
        /stop_grace_period 10s/,
      ],
      ['a missing service', (c) => delete c.services.migrate, /migrate: missing/],
    ];
    it.each(cases)('%s', (_, breakIt, expected) => {
      const broken = compose();
      breakIt(broken);
      expect(composeProblems(broken).join('\n')).toMatch(expected);
    });
  });
});
