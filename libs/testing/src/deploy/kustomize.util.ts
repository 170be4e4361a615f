import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseYamlDocs, readYamlDocs, type Doc } from './deploy.util';

/**
 * A small kustomize for the fields k8s/ uses: resources, components, configMapGenerator (files,
 * literals, options.labels; create, merge, replace), patches (strategic merge, by path or inline, optional
 * target), images and namespace. Any other field throws, so nothing is silently left out.
 * Generated names get no hash suffix; `normalizeKustomizeOutput` strips kustomize's.
 */
export function renderKustomization(dir: string): Doc[] {
  return build(dir, [], 'Kustomization');
}

const SUPPORTED = new Set([
  'apiVersion',
  'kind',
  'resources',
  'components',
  'configMapGenerator',
  'patches',
  'images',
  'namespace',
]);

function build(dir: string, inherited: Doc[], expectedKind: string): Doc[] {
  const file = path.join(dir, 'kustomization.yaml');
  if (!existsSync(file)) throw new Error(`${dir}: no kustomization.yaml`);
  const [k] = readYamlDocs(file);
  const kind = k.kind ?? 'Kustomization';
  if (kind !== expectedKind) throw new Error(`${file}: kind ${kind} where ${expectedKind} is expected`);
  for (const key of Object.keys(k)) {
    if (!SUPPORTED.has(key)) throw new Error(`${file}: "${key}" is not supported by this renderer`);
  }

  let out = [...inherited];
  for (const entry of (k.resources ?? []) as string[]) {
    const target = path.resolve(dir, entry);
    if (!existsSync(target)) throw new Error(`${file}: resource ${entry} does not exist`);
    out.push(...(statSync(target).isDirectory() ? build(target, [], 'Kustomization') : readYamlDocs(target)));
  }
  for (const entry of (k.components ?? []) as string[]) {
    out = build(path.resolve(dir, entry), out, 'Component');
  }
  for (const generator of (k.configMapGenerator ?? []) as Doc[]) out = generateConfigMap(dir, generator, out);
  for (const patch of (k.patches ?? []) as Doc[]) out = applyPatch(dir, patch, out);
  for (const image of (k.images ?? []) as Doc[]) out.forEach((doc) => setImage(doc, image));
  if (k.namespace) out = out.map((doc) => withNamespace(doc, k.namespace));
  return out;
}

function generateConfigMap(dir: string, generator: Doc, docs: Doc[]): Doc[] {
  const data: Record<string, string> = {};
  for (const entry of (generator.files ?? []) as string[]) {
    const [key, file] = entry.includes('=') ? entry.split('=', 2) : [path.basename(entry), entry];
    data[key] = readFileSync(path.resolve(dir, file), 'utf8');
  }
  for (const literal of (generator.literals ?? []) as string[]) {
    const at = literal.indexOf('=');
    data[literal.slice(0, at)] = literal.slice(at + 1);
  }
  const { labels, disableNameSuffixHash, ...otherOptions } = (generator.options ?? {}) as Doc;
  if (Object.keys(otherOptions).length) {
    throw new Error(`ConfigMap ${generator.name}: options ${Object.keys(otherOptions)} are not supported`);
  }
  void disableNameSuffixHash; // names never get a suffix here
  const behavior = generator.behavior ?? 'create';
  const existing = docs.findIndex((d) => d.kind === 'ConfigMap' && d.metadata?.name === generator.name);
  if (behavior === 'create') {
    if (existing >= 0) throw new Error(`ConfigMap ${generator.name} is generated twice`);
    const metadata = { name: generator.name, ...(labels ? { labels } : {}) };
    return [...docs, { apiVersion: 'v1', kind: 'ConfigMap', metadata, data }];
  }
  if (existing < 0) throw new Error(`ConfigMap ${generator.name}: nothing to ${behavior}`);
  const current = docs[existing];
  const next = { ...current, data: behavior === 'merge' ? { ...current.data, ...data } : data };
  return docs.map((d, i) => (i === existing ? next : d));
}

function applyPatch(dir: string, spec: Doc, docs: Doc[]): Doc[] {
  const patches: Doc[] = spec.path
    ? readYamlDocs(path.resolve(dir, spec.path))
    : spec.patch
      ? parseYamlDocs(spec.patch, `${dir}: inline patch`)
      : [];
  if (!patches.length) throw new Error(`patch ${JSON.stringify(spec)}: empty`);
  let out = docs;
  for (const patch of patches) {
    const target = spec.target ?? { kind: patch.kind, name: patch.metadata?.name };
    let hits = 0;
    out = out.map((doc) => {
      if ((target.kind && doc.kind !== target.kind) || (target.name && doc.metadata?.name !== target.name))
        return doc;
      hits++;
      const { apiVersion: _a, kind: _k, metadata, ...rest } = patch;
      const { name: _n, ...meta } = metadata ?? {};
      return merge(doc, { ...rest, metadata: meta }) as Doc;
    });
    if (!hits) throw new Error(`patch for ${target.kind}/${target.name} matches nothing`);
  }
  return out;
}

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Strategic merge: maps merge, lists of named items merge by name, anything else is replaced. */
function merge(target: unknown, patch: unknown): unknown {
  if (isObject(target) && isObject(patch)) {
    const out: Doc = { ...target };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key];
      else out[key] = merge(target[key], value);
    }
    return out;
  }
  const named = (list: unknown): list is Doc[] =>
    Array.isArray(list) && list.every((item) => isObject(item) && typeof item.name === 'string');
  if (named(target) && named(patch)) {
    const out = target.map((item) => {
      const change = patch.find((p) => p.name === item.name);
      return change ? (merge(item, change) as Doc) : item;
    });
    return [...out, ...patch.filter((p) => !target.some((item) => item.name === p.name))];
  }
  return structuredClone(patch);
}

function podSpecs(doc: Doc): Doc[] {
  const template = doc.spec?.template?.spec ?? doc.spec?.jobTemplate?.spec?.template?.spec;
  return template ? [template] : [];
}

function setImage(doc: Doc, image: Doc): void {
  for (const spec of podSpecs(doc)) {
    for (const container of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
      const match = /^([^@]+?)(?::([^:/@]+))?(@.+)?$/.exec(container.image);
      if (!match || match[1] !== image.name) continue;
      const tag = image.digest ? `@${image.digest}` : `:${image.newTag ?? match[2] ?? 'latest'}`;
      container.image = `${image.newName ?? match[1]}${tag}`;
    }
  }
}

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
]);

function withNamespace(doc: Doc, namespace: string): Doc {
  if (CLUSTER_SCOPED.has(doc.kind)) return doc;
  return { ...doc, metadata: { ...doc.metadata, namespace } };
}

/** `kubectl kustomize <dir>` when kubectl is installed; null when it is not. */
export function kubectlKustomize(dir: string): Doc[] | null {
  const run = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  if (run.error) return null;
  if (run.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${run.stderr}`);
  return parseYamlDocs(run.stdout, `kubectl kustomize ${dir}`);
}

/** kustomize's output with the hash suffixes of generated ConfigMaps taken off, names and references. */
export function normalizeKustomizeOutput(docs: Doc[]): Doc[] {
  const renamed = new Map<string, string>();
  for (const doc of docs) {
    const match = doc.kind === 'ConfigMap' ? /^(.+)-[a-z0-9]{10}$/.exec(doc.metadata?.name ?? '') : null;
    if (match) renamed.set(match[0], match[1]);
  }
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return renamed.get(value) ?? value;
    if (Array.isArray(value)) return value.map(walk);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  return docs.map((doc) => walk(doc) as Doc);
}
