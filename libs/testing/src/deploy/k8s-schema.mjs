// Validates Kubernetes and KEDA objects (a JSON array on stdin) against the JSON schemas that
// kubernetes-models and @kubernetes-models/keda bundle; prints a JSON array of problems.
// Those packages are ES modules only, so the test runs this as a child process.
let input = '';
for await (const chunk of process.stdin) input += chunk;

const problems = [];
for (const doc of JSON.parse(input)) {
  const id = `${doc.kind}/${doc.metadata?.name}`;
  const [group, version] = String(doc.apiVersion).includes('/')
    ? doc.apiVersion.split('/')
    : ['', doc.apiVersion];
  const pkg = group.endsWith('keda.sh') ? '@kubernetes-models/keda' : 'kubernetes-models';
  let Model;
  try {
    Model = (await import(`${pkg}/${group ? `${group}/` : ''}${version}/${doc.kind}`))[doc.kind];
  } catch {
    Model = undefined;
  }
  if (!Model) {
    problems.push(`${id}: no schema for ${doc.apiVersion} ${doc.kind}`);
    continue;
  }
  try {
    new Model(doc).validate();
  } catch (err) {
    problems.push(`${id}: ${err.message}`);
  }
}
process.stdout.write(JSON.stringify(problems));
