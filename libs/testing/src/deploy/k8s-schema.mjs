// Validates Kubernetes objects (a JSON array of { doc, module } on stdin, module naming the model
// package's file for the doc's kind) against the JSON schemas those packages bundle; prints a JSON
// array of problems.
// Those packages are ES modules only, so the test runs this as a child process.
let input = '';
for await (const chunk of process.stdin) input += chunk;

const problems = [];
for (const { doc, module } of JSON.parse(input)) {
  const id = `${doc.kind}/${doc.metadata?.name}`;
  let Model;
  try {
    Model = (await import(module))[doc.kind];
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
