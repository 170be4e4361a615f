import { parse } from 'yaml';
import { APPS, WORKERS, type App, type Doc, type Worker } from './deploy.util';

/** What the code says the manifests must match (read by the spec from apps/ and libs/). */
export interface PortalFacts {
  /** Default PORT (gateway) or HEALTH_PORT (workers). */
  ports: Record<App, number>;
  shutdownDeadlineMs: Record<Worker, number>;
  queue: Record<Worker, string>;
  concurrency: Record<Worker, number>;
  keyPrefix: (portalPrefix: string, queue: string) => string;
}

/** The only Secret the manifests may name: created by the operator, never committed. */
export const SECRET_NAME = 'portal-secrets';
const GRACE_MARGIN_S = 5;

const byKind = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);
const labelsMatch = (selector: Doc | undefined, labels: Doc | undefined) =>
  !!selector &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** The portal's own rules for a rendered set of manifests; an empty list means they hold. */
export function portalProblems(docs: Doc[], facts: PortalFacts): string[] {
  const problems: string[] = [];
  const configMaps = new Map<string, Doc>(byKind(docs, 'ConfigMap').map((d) => [d.metadata.name, d]));
  const deployments = byKind(docs, 'Deployment');

  for (const secret of byKind(docs, 'Secret'))
    problems.push(`Secret/${secret.metadata?.name}: no Secret may be committed`);

  for (const app of APPS) {
    const matches = deployments.filter((d) => d.metadata?.name === app);
    if (matches.length !== 1) problems.push(`Deployment/${app}: expected one, found ${matches.length}`);
  }

  for (const deployment of deployments) {
    const name: string = deployment.metadata?.name;
    const at = `Deployment/${name}`;
    const pod = deployment.spec?.template;
    if (!labelsMatch(deployment.spec?.selector?.matchLabels, pod?.metadata?.labels)) {
      problems.push(`${at}: selector does not match the pod labels`);
    }
    problems.push(...podProblems(at, pod?.spec ?? {}, configMaps));
    const container = pod?.spec?.containers?.[0] ?? {};
    if (!(APPS as readonly string[]).includes(name)) continue;
    const app = name as App;
    if (container.args?.[0] !== app)
      problems.push(`${at}: the container must run the image with argument "${app}"`);

    const portVar = app === 'gateway' ? 'PORT' : 'HEALTH_PORT';
    const envPort = (container.env ?? []).find((e: Doc) => e.name === portVar)?.value;
    const port = envPort === undefined ? facts.ports[app] : Number(envPort);
    for (const [probe, route] of [
      ['livenessProbe', '/health/live'],
      ['readinessProbe', '/health/ready'],
    ] as const) {
      const get = container[probe]?.httpGet;
      if (!get) {
        problems.push(`${at}: no ${probe}`);
        continue;
      }
      if (get.path !== route) problems.push(`${at}: ${probe} must GET ${route}, not ${get.path}`);
      const probed =
        typeof get.port === 'number'
          ? get.port
          : (container.ports ?? []).find((p: Doc) => p.name === get.port)?.containerPort;
      if (probed !== port)
        problems.push(`${at}: ${probe} probes port ${get.port}, the app listens on ${port}`);
    }

    if (app !== 'gateway') {
      const worker = app as Worker;
      const needed = Math.ceil(facts.shutdownDeadlineMs[worker] / 1000) + GRACE_MARGIN_S;
      const grace = pod?.spec?.terminationGracePeriodSeconds ?? 30;
      if (grace < needed) {
        problems.push(
          `${at}: terminationGracePeriodSeconds ${grace} < shutdown deadline + ${GRACE_MARGIN_S} s = ${needed}`,
        );
      }
    }

    const budgets = byKind(docs, 'PodDisruptionBudget').filter((b) =>
      labelsMatch(b.spec?.selector?.matchLabels, pod?.metadata?.labels),
    );
    if (budgets.length !== 1)
      problems.push(`${at}: expected one PodDisruptionBudget, found ${budgets.length}`);
  }

  const gateway = deployments.find((d) => d.metadata?.name === 'gateway');
  const service = byKind(docs, 'Service').find((s) => s.metadata?.name === 'gateway');
  if (!service) problems.push('Service/gateway: missing');
  else if (gateway) {
    if (!labelsMatch(service.spec?.selector, gateway.spec?.template?.metadata?.labels)) {
      problems.push('Service/gateway: selector does not match the gateway pods');
    }
    const ports = gateway.spec?.template?.spec?.containers?.[0]?.ports ?? [];
    for (const p of service.spec?.ports ?? []) {
      if (!ports.some((c: Doc) => c.name === p.targetPort || c.containerPort === p.targetPort)) {
        problems.push(`Service/gateway: targetPort ${p.targetPort} is no port of the gateway`);
      }
    }
  }

  const jobs = byKind(docs, 'Job').filter(
    (j) => j.spec?.template?.spec?.containers?.[0]?.args?.[0] === 'migrate',
  );
  if (jobs.length !== 1)
    problems.push(`Job: expected one migration Job (args [migrate]), found ${jobs.length}`);
  for (const job of byKind(docs, 'Job')) {
    problems.push(...podProblems(`Job/${job.metadata?.name}`, job.spec?.template?.spec ?? {}, configMaps));
  }

  problems.push(...autoscalingProblems(docs, facts, configMaps));
  return problems;
}

function podProblems(at: string, spec: Doc, configMaps: Map<string, Doc>): string[] {
  const problems: string[] = [];
  const volumes = new Map<string, Doc>((spec.volumes ?? []).map((v: Doc) => [v.name, v]));
  for (const volume of volumes.values()) {
    if (volume.configMap && !configMaps.has(volume.configMap.name)) {
      problems.push(
        `${at}: volume ${volume.name} names ConfigMap ${volume.configMap.name}, which is not there`,
      );
    }
    if (volume.secret && volume.secret.secretName !== SECRET_NAME) {
      problems.push(
        `${at}: volume ${volume.name} names Secret ${volume.secret.secretName}, not ${SECRET_NAME}`,
      );
    }
  }
  const podNonRoot = spec.securityContext?.runAsNonRoot === true;
  if (!spec.containers?.length) problems.push(`${at}: no containers`);
  for (const c of spec.containers ?? []) {
    const where = `${at} container ${c.name}`;
    for (const kind of ['requests', 'limits'])
      for (const resource of ['cpu', 'memory'])
        if (!c.resources?.[kind]?.[resource]) problems.push(`${where}: no ${kind}.${resource}`);
    if (!podNonRoot && c.securityContext?.runAsNonRoot !== true) problems.push(`${where}: may run as root`);
    if (!/^[^@]+:(?!latest$)[\w.-]+$|@sha256:[0-9a-f]{64}$/.test(c.image ?? '')) {
      problems.push(`${where}: image ${c.image} is not pinned to a tag (other than latest) or digest`);
    }
    for (const source of c.envFrom ?? []) {
      if (source.configMapRef && !configMaps.has(source.configMapRef.name)) {
        problems.push(`${where}: envFrom names ConfigMap ${source.configMapRef.name}, which is not there`);
      }
      if (source.secretRef && source.secretRef.name !== SECRET_NAME) {
        problems.push(`${where}: envFrom names Secret ${source.secretRef.name}, not ${SECRET_NAME}`);
      }
    }
    for (const env of c.env ?? []) {
      const secret = env.valueFrom?.secretKeyRef;
      if (secret && secret.name !== SECRET_NAME)
        problems.push(`${where}: ${env.name} comes from Secret ${secret.name}`);
    }
    // Every file a PORTAL_*_FILE variable names must be a key of a mounted ConfigMap.
    const env: Record<string, string> = {};
    for (const source of c.envFrom ?? []) Object.assign(env, configMaps.get(source.configMapRef?.name)?.data);
    for (const e of c.env ?? []) if (typeof e.value === 'string') env[e.name] = e.value;
    for (const [name, file] of Object.entries(env)) {
      if (!/^PORTAL_\w+_FILE$/.test(name)) continue;
      const mount = (c.volumeMounts ?? []).find((m: Doc) =>
        file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`),
      );
      const source = configMaps.get(volumes.get(mount?.name)?.configMap?.name);
      const key = mount ? file.slice(mount.mountPath.replace(/\/$/, '').length + 1) : '';
      if (!source?.data?.[key]) problems.push(`${where}: ${name}=${file} is in no mounted ConfigMap`);
    }
  }
  return problems;
}

function autoscalingProblems(docs: Doc[], facts: PortalFacts, configMaps: Map<string, Doc>): string[] {
  const problems: string[] = [];
  const scaledObjects = byKind(docs, 'ScaledObject');
  const hpas = byKind(docs, 'HorizontalPodAutoscaler');
  const deployments = new Map<string, Doc>(byKind(docs, 'Deployment').map((d) => [d.metadata.name, d]));
  const authentications = new Set(byKind(docs, 'TriggerAuthentication').map((t) => t.metadata?.name));
  const portalPrefix = configMaps.get('portal-env')?.data?.PORTAL_PREFIX ?? 'portal';

  const targets = [
    ...scaledObjects.map((s) => ({
      at: `ScaledObject/${s.metadata?.name}`,
      name: s.spec?.scaleTargetRef?.name,
    })),
    ...hpas.map((h) => ({
      at: `HorizontalPodAutoscaler/${h.metadata?.name}`,
      name: h.spec?.scaleTargetRef?.name,
    })),
  ];
  for (const { at, name } of targets) {
    if (!deployments.has(name)) problems.push(`${at}: scales ${name}, which is no Deployment here`);
    const others = targets.filter((t) => t.name === name);
    if (others.length > 1) problems.push(`${at}: Deployment ${name} has ${others.length} autoscalers`);
    else if (deployments.get(name)?.spec?.replicas !== undefined) {
      problems.push(`Deployment/${name}: sets replicas although ${at} owns the count`);
    }
  }

  for (const so of scaledObjects) {
    const at = `ScaledObject/${so.metadata?.name}`;
    const worker = so.spec?.scaleTargetRef?.name as Worker;
    if (!(WORKERS as readonly string[]).includes(worker)) continue;
    const queue = facts.queue[worker];
    const prefix = `${facts.keyPrefix(portalPrefix, queue)}:${queue}`;
    const triggers: Doc[] = so.spec?.triggers ?? [];
    const lists = triggers.map((t) => t.metadata?.listName);
    for (const t of triggers) {
      if (!['redis', 'redis-cluster'].includes(t.type))
        problems.push(`${at}: trigger type ${t.type} is not a redis list`);
      if (t.authenticationRef && !authentications.has(t.authenticationRef.name)) {
        problems.push(`${at}: TriggerAuthentication ${t.authenticationRef.name} is not there`);
      }
    }
    for (const list of ['wait', 'active']) {
      if (!lists.includes(`${prefix}:${list}`))
        problems.push(`${at}: no trigger on the list ${prefix}:${list}`);
    }
    for (const list of lists) {
      if (!/^.+:(wait|active)$/.test(list ?? '') || !list.startsWith(`${prefix}:`)) {
        problems.push(`${at}: ${list} is not a BullMQ list of queue ${queue} (LLEN reads lists only)`);
      }
    }
    const modifiers = so.spec?.advanced?.scalingModifiers;
    const names = triggers.map((t) => t.name);
    if (!modifiers?.formula || names.some((n) => !n || !new RegExp(`\\b${n}\\b`).test(modifiers.formula))) {
      problems.push(`${at}: scalingModifiers.formula must add up every named trigger`);
    }
    if (Number(modifiers?.target) !== facts.concurrency[worker]) {
      problems.push(
        `${at}: target ${modifiers?.target} is not the worker's concurrency ${facts.concurrency[worker]}`,
      );
    }
  }

  for (const hpa of hpas) {
    const metrics: Doc[] = hpa.spec?.metrics ?? [];
    if (!metrics.some((m) => m.type === 'Resource' && m.resource?.name === 'cpu')) {
      problems.push(`HorizontalPodAutoscaler/${hpa.metadata?.name}: no CPU metric`);
    }
  }
  return problems;
}

/**
 * The tracing component's wiring: the services' OTLP endpoint is the collector's Service and the
 * port its OTLP/HTTP receiver listens on; the collector reads the config the ConfigMap mounts,
 * every pipeline names only defined parts, and its probes hit the health_check extension.
 */
export function tracingProblems(docs: Doc[]): string[] {
  const problems: string[] = [];
  const configMaps = new Map<string, Doc>(byKind(docs, 'ConfigMap').map((d) => [d.metadata.name, d]));
  const collector = byKind(docs, 'Deployment').find((d) => d.metadata?.name === 'otel-collector');
  const service = byKind(docs, 'Service').find((s) => s.metadata?.name === 'otel-collector');
  if (!collector || !service) return ['Deployment and Service otel-collector: missing'];
  const pod = collector.spec.template.spec;
  const container = pod.containers[0];
  const configArg = (container.args ?? []).find((a: string) => a.startsWith('--config='))?.slice(9) ?? '';
  const mount = (container.volumeMounts ?? []).find((m: Doc) => configArg.startsWith(`${m.mountPath}/`));
  const volume = (pod.volumes ?? []).find((v: Doc) => v.name === mount?.name);
  const text = configMaps.get(volume?.configMap?.name)?.data?.[
    configArg.slice((mount?.mountPath ?? '').length + 1)
  ];
  if (!text) return [`Deployment/otel-collector: --config=${configArg} is in no mounted ConfigMap`];
  const config = parse(text) as Doc;

  for (const [name, pipeline] of Object.entries((config.service?.pipelines ?? {}) as Record<string, Doc>)) {
    for (const part of ['receivers', 'processors', 'exporters']) {
      for (const id of (pipeline[part] ?? []) as string[]) {
        if (!config[part]?.[id]) problems.push(`collector pipeline ${name}: ${part} ${id} is not defined`);
      }
    }
  }
  const portOf = (endpoint: unknown) => Number(/:(\d+)$/.exec(String(endpoint))?.[1]);
  const containerPort = (name: unknown) =>
    typeof name === 'number'
      ? name
      : (container.ports ?? []).find((p: Doc) => p.name === name)?.containerPort;

  const receiverPort = portOf(config.receivers?.otlp?.protocols?.http?.endpoint);
  const servicePort = (service.spec.ports ?? []).find(
    (p: Doc) => containerPort(p.targetPort) === receiverPort,
  );
  if (!servicePort)
    problems.push(`Service/otel-collector: no port targets the OTLP/HTTP receiver (${receiverPort})`);
  const endpoint = configMaps.get('portal-env')?.data?.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = endpoint ? new URL(endpoint) : null;
  if (!url || url.hostname !== 'otel-collector' || Number(url.port) !== servicePort?.port) {
    problems.push(
      `portal-env: OTEL_EXPORTER_OTLP_ENDPOINT ${endpoint} is not the collector's OTLP/HTTP port`,
    );
  }

  const healthPort = portOf(config.extensions?.health_check?.endpoint);
  if (!(config.service?.extensions ?? []).includes('health_check'))
    problems.push('collector: health_check is off');
  for (const probe of ['livenessProbe', 'readinessProbe']) {
    if (containerPort(container[probe]?.httpGet?.port) !== healthPort)
      problems.push(`Deployment/otel-collector: ${probe} does not probe health_check (${healthPort})`);
  }
  return problems;
}
