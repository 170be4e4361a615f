import { spawnSync } from 'node:child_process';
import path from 'node:path';
import ts from 'typescript';
import { ROOT, type Doc } from './deploy.util';

const id = (doc: Doc) => `${doc.kind}/${doc.metadata?.name}`;

/** Problems found by the Kubernetes, KEDA and Prometheus Operator JSON schemas (types, required fields, formats). */
export function schemaProblems(docs: Doc[]): string[] {
  const run = spawnSync(process.execPath, [path.join(__dirname, 'k8s-schema.mjs')], {
    cwd: ROOT,
    input: JSON.stringify(docs.map((doc) => ({ doc, module: modelModule(doc) }))),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`k8s-schema.mjs failed: ${run.stderr || run.error}`);
  return JSON.parse(run.stdout) as string[];
}

/** The kubernetes-models file of a doc's kind (KEDA's and the Prometheus Operator's from their packages). */
function modelModule(doc: Doc): string {
  const [group, version] = String(doc.apiVersion).includes('/')
    ? doc.apiVersion.split('/')
    : ['', doc.apiVersion];
  const pkg = group.endsWith('keda.sh')
    ? '@kubernetes-models/keda'
    : group === 'monitoring.coreos.com'
      ? '@kubernetes-models/prometheus-operator'
      : 'kubernetes-models';
  return `${pkg}/${group ? `${group}/` : ''}${version}/${doc.kind}`;
}

const sourceFiles = new Map<string, ts.SourceFile | undefined>();

/**
 * Fields the API server would reject as unknown (`kubectl apply --validate=strict`): the JSON
 * schemas allow any extra field, so each object is also type-checked as an object literal of the
 * TypeScript interface the same packages ship, where an unknown or misspelt field is an error.
 */
export function unknownFieldProblems(docs: Doc[]): string[] {
  const file = path.join(ROOT, '__deploy_check__.ts');
  const lines = docs.map((doc, i) => {
    const type = `import('${modelModule(doc)}').I${doc.kind}`;
    return `export const m${i}: ${type} = ${JSON.stringify(doc)};`;
  });
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    target: ts.ScriptTarget.ES2022,
  };
  const host = ts.createCompilerHost(options);
  const text = lines.join('\n');
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (name, language, ...rest) => {
    if (name === file) return ts.createSourceFile(name, text, language);
    if (!sourceFiles.has(name)) sourceFiles.set(name, getSourceFile.call(host, name, language, ...rest));
    return sourceFiles.get(name);
  };
  const fileExists = host.fileExists;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file?.fileName !== file || d.start === undefined) return message;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line;
    return `${id(docs[line])}: ${message}`;
  });
}

/** Both checks; an empty list means every object is valid. */
export function manifestProblems(docs: Doc[]): string[] {
  return [...schemaProblems(docs), ...unknownFieldProblems(docs)];
}
