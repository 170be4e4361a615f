import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { QueueName } from '@portal/contracts';
import { parseCatalogue } from '@portal/model';
import { readTracingConfig } from '@portal/observability';
import { queueKeyPrefix, WORKER_OPTIONS } from '@portal/queue';
import { APPS, defaultPort, ROOT, shutdownDeadlineMs, WORKERS, type Doc, type Worker } from './deploy.util';
import { manifestProblems, schemaProblems, unknownFieldProblems } from './k8s-schema.util';
import { portalProblems, tracingProblems, type PortalFacts } from './k8s-policy.util';
import { kubectlKustomize, normalizeKustomizeOutput, renderKustomization } from './kustomize.util';

const K8S = path.join(ROOT, 'k8s');
const QUEUE: Record<Worker, QueueName> = {
  'turn-orchestrator': QueueName.Turns,
  'attachment-ingest': QueueName.Attachments,
  'compaction-worker': QueueName.Compactions,
};
const facts: PortalFacts = {
  ports: Object.fromEntries(APPS.map((app) => [app, defaultPort(app)])) as PortalFacts['ports'],
  shutdownDeadlineMs: Object.fromEntries(
    WORKERS.map((w) => [w, shutdownDeadlineMs(w)]),
  ) as PortalFacts['shutdownDeadlineMs'],
  queue: QUEUE,
  concurrency: Object.fromEntries(
    WORKERS.map((w) => [w, WORKER_OPTIONS[QUEUE[w]].concurrency]),
  ) as PortalFacts['concurrency'],
  keyPrefix: (prefix, queue) => queueKeyPrefix(prefix, queue as QueueName),
};

const clone = <T>(value: T): T => structuredClone(value);
const find = (docs: Doc[], kind: string, name: string) =>
  docs.find((d) => d.kind === kind && d.metadata?.name === name) as Doc;

/** An overlay of the base plus one autoscaling component, written to a temporary folder. */
function overlayWith(component: 'keda' | 'hpa' | 'monitoring' | 'tracing'): string {
  const dir = mkdtempSync(path.join(tmpdir(), `k8s-${component}-`));
  const rel = (to: string) => path.relative(dir, path.join(K8S, to));
  writeFileSync(
    path.join(dir, 'kustomization.yaml'),
    `resources: [${rel('base')}]\ncomponents: [${rel(`components/${component}`)}]\n`,
  );
  return dir;
}

describe('k8s manifests', () => {
  const dirs: Record<string, string> = {
    base: path.join(K8S, 'base'),
    'overlays/example': path.join(K8S, 'overlays', 'example'),
    'base + components/keda': overlayWith('keda'),
    'base + components/hpa': overlayWith('hpa'),
    'base + components/monitoring': overlayWith('monitoring'),
    'base + components/tracing': overlayWith('tracing'),
  };
  afterAll(() => {
    for (const name of Object.keys(dirs).filter((n) => n.includes('components/')))
      rmSync(dirs[name], { recursive: true });
  });
  const example = renderKustomization(dirs['overlays/example']);
  const renders: Record<string, Doc[]> = {
    base: renderKustomization(dirs.base),
    'overlays/example': example,
    'base + components/keda': renderKustomization(dirs['base + components/keda']),
    'base + components/hpa': renderKustomization(dirs['base + components/hpa']),
    'base + components/monitoring': renderKustomization(dirs['base + components/monitoring']),
    'base + components/tracing': renderKustomization(dirs['base + components/tracing']),
  };

  it.each(Object.keys(renders))(
    '%s: every object passes its schema (Kubernetes, KEDA, Prometheus Operator), no unknown field',
    (name) => {
      expect(manifestProblems(renders[name])).toEqual([]);
    },
  );

  it.each(Object.keys(renders))(
    '%s: follows the portal rules (probes, ports, resources, grace, PDBs, scaling)',
    (name) => {
      expect(portalProblems(renders[name], facts)).toEqual([]);
    },
  );

  it('the example overlay scales every worker with KEDA, and nothing with a plain HPA', () => {
    const targets = example.filter((d) => d.kind === 'ScaledObject').map((d) => d.spec.scaleTargetRef.name);
    expect(targets.sort()).toEqual([...WORKERS].sort());
    expect(example.filter((d) => d.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    const hpa = renders['base + components/hpa'].filter((d) => d.kind === 'HorizontalPodAutoscaler');
    expect(hpa.map((d) => d.spec.scaleTargetRef.name).sort()).toEqual([...WORKERS].sort());
  });

  it('the example overlay sets namespace and image, and ships a valid model catalogue and bootstrap file', () => {
    expect(example.every((d) => d.metadata.namespace === 'portal')).toBe(true);
    const images = example.flatMap((d) =>
      (d.spec?.template?.spec?.containers ?? []).map((c: Doc) => c.image),
    );
    expect(new Set(images)).toEqual(new Set(['registry.example.com/portal:0.1.0']));

    for (const render of [renders.base, example]) {
      const files = find(render, 'ConfigMap', 'portal-files').data;
      const catalogue = parseCatalogue(files['models.yaml'], 'models.yaml');
      const bootstrap = parse(files['bootstrap.yaml']);
      const agents = bootstrap.orgs.flatMap((org: Doc) => org.agents ?? []);
      for (const agent of agents) expect(catalogue.map((m) => m.id)).toContain(agent.model);
      // Keys committed to git are public: a bootstrap file with users belongs in a Secret.
      expect(bootstrap.orgs.flatMap((org: Doc) => org.users ?? [])).toEqual([]);
    }
  });

  it('the tracing component runs a collector and points every service at it over OTLP/HTTP', () => {
    const docs = renders['base + components/tracing'];
    expect(tracingProblems(docs)).toEqual([]);
    const env = find(docs, 'ConfigMap', 'portal-env').data;
    expect(env.PORTAL_PREFIX).toBe('portal'); // merged into, not replaced
    for (const app of APPS) {
      const container = find(docs, 'Deployment', app).spec.template.spec.containers[0];
      expect(container.envFrom).toContainEqual({ configMapRef: { name: 'portal-env' } });
      expect(readTracingConfig(env, app)).toEqual({
        enabled: true,
        serviceName: app,
        protocol: 'http/protobuf',
      });
    }
    // Without the component, nothing is traced.
    expect(readTracingConfig(find(renders.base, 'ConfigMap', 'portal-env').data, 'gateway')).toEqual({
      enabled: false,
    });
  });

  it.each(Object.keys(renders))(
    '%s: renders as kubectl kustomize does (when kubectl is installed)',
    (name) => {
      const real = kubectlKustomize(dirs[name]);
      if (real === null) return; // no kubectl here: the in-test renderer alone is used
      const key = (d: Doc) => `${d.kind}/${d.metadata.name}`;
      const sort = (docs: Doc[]) => [...docs].sort((a, b) => key(a).localeCompare(key(b)));
      expect(sort(renders[name])).toEqual(sort(normalizeKustomizeOutput(real)));
    },
  );

  it('no producer sets a job priority, so the `wait` list KEDA reads holds every waiting job', () => {
    const sources = ['apps', 'libs/queue/src'].flatMap((dir) =>
      (readdirSync(path.join(ROOT, dir), { recursive: true }) as string[])
        .filter((f) => f.endsWith('.ts') && !/\.(spec|int-spec|e2e-spec)\.ts$/.test(f))
        .map((f) => path.join(ROOT, dir, f)),
    );
    const withPriority = sources.filter((f) => /\bpriority\s*:/.test(readFileSync(f, 'utf8')));
    expect(withPriority.map((f) => path.relative(ROOT, f))).toEqual([]);
  });

  describe('fails on broken manifests', () => {
    const deployment = () => clone(find(example, 'Deployment', 'turn-orchestrator'));

    it('a misspelt field', () => {
      const broken = deployment();
      broken.spec.template.spec.containers[0].imagePullPolicyy = 'Always';
      expect(unknownFieldProblems([broken]).join()).toMatch(/imagePullPolicyy/);
    });

    it('a wrong type, and a missing required field', () => {
      const broken = deployment();
      broken.spec.replicas = 'two';
      delete broken.spec.selector;
      const problems = schemaProblems([broken]).join();
      expect(problems).toMatch(/replicas must be integer/);
      expect(problems).toMatch(/selector/);
    });

    it('a KEDA trigger with a number where KEDA takes a string, and an unknown kind', () => {
      const so = clone(find(example, 'ScaledObject', 'turn-orchestrator'));
      so.spec.triggers[0].metadata.listLength = 20;
      const problems = schemaProblems([
        so,
        { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
      ]);
      expect(problems.join()).toMatch(/listLength must be string/);
      expect(problems.join()).toMatch(/no schema for example.com\/v1 Widget/);
    });

    it('a worker without probes, resources, grace period and on the wrong port', () => {
      const docs = clone(example);
      const d = find(docs, 'Deployment', 'compaction-worker');
      const c = d.spec.template.spec.containers[0];
      delete c.readinessProbe;
      delete c.resources.limits;
      c.env = [{ name: 'HEALTH_PORT', value: '4000' }];
      d.spec.template.spec.terminationGracePeriodSeconds = 10;
      const problems = portalProblems(docs, facts).join('\n');
      expect(problems).toMatch(/compaction-worker: no readinessProbe/);
      expect(problems).toMatch(/no limits.cpu/);
      expect(problems).toMatch(/livenessProbe probes port health, the app listens on 4000/);
      expect(problems).toMatch(/terminationGracePeriodSeconds 10/);
    });

    it('KEDA and an HPA on one worker, a prioritized zset, a wrong target, a committed Secret', () => {
      const docs = [
        ...clone(example),
        ...renders['base + components/hpa'].filter((d) => d.kind === 'HorizontalPodAutoscaler'),
      ];
      const so = find(docs, 'ScaledObject', 'attachment-ingest');
      so.spec.triggers[0].metadata.listName = '{portal:attachments}:attachments:prioritized';
      so.spec.advanced.scalingModifiers.target = '50';
      docs.push({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'portal-secrets' },
        stringData: { A: 'b' },
      });
      const problems = portalProblems(docs, facts).join('\n');
      expect(problems).toMatch(/Deployment turn-orchestrator has 2 autoscalers/);
      expect(problems).toMatch(/prioritized is not a BullMQ list/);
      expect(problems).toMatch(/target 50 is not the worker's concurrency 2/);
      expect(problems).toMatch(/Secret\/portal-secrets: no Secret may be committed/);
    });

    it('a collector on another port than the services send to, and a pipeline naming an undefined part', () => {
      const docs = clone(renders['base + components/tracing']);
      find(docs, 'ConfigMap', 'portal-env').data.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://otel-collector:4317';
      const collectorConfig = find(docs, 'ConfigMap', 'otel-collector-config');
      collectorConfig.data['config.yaml'] = collectorConfig.data['config.yaml'].replace(
        'exporters: [otlphttp/backend]',
        'exporters: [otlphttp/elsewhere]',
      );
      const problems = tracingProblems(docs).join('\n');
      expect(problems).toMatch(
        /OTEL_EXPORTER_OTLP_ENDPOINT http:\/\/otel-collector:4317 is not the collector's/,
      );
      expect(problems).toMatch(/exporters otlphttp\/elsewhere is not defined/);
    });

    it('a PORTAL_PREFIX that the queue triggers do not follow, and a missing ConfigMap', () => {
      const docs = clone(example);
      find(docs, 'ConfigMap', 'portal-env').data.PORTAL_PREFIX = 'other';
      find(docs, 'ConfigMap', 'portal-files').metadata.name = 'renamed';
      const problems = portalProblems(docs, facts).join('\n');
      expect(problems).toMatch(/no trigger on the list \{other:turns\}:turns:wait/);
      expect(problems).toMatch(/names ConfigMap portal-files, which is not there/);
    });
  });
});
