import {
  E2E_KEYS,
  requestFuzzCases,
  startE2EPortal,
  startFakeOpenAI,
  tally,
  textTable,
  type E2EPortal,
  type FakeOpenAI,
  type FuzzCase,
  type FuzzTargets,
} from '@portal/testing';
import {
  closeRawAgent,
  codeOf,
  errorLogLines,
  errorShapeProblem,
  pausedOnApproval,
  sendRaw,
  uploadText,
  type RawResponse,
} from './security.helpers';

/**
 * Issue part 2: a deterministic request fuzzer over every endpoint of API.md against the real
 * portal (every service a process). Wrong types, missing and extra fields, huge and deep bodies,
 * Unicode edge cases (lone surrogates, RTL marks, zero-width joiners, NFC/NFD, Vietnamese tone
 * marks, NUL), invalid slugs and ids (uuid-like, another org's), bad Last-Event-IDs, wrong content
 * types, wrong methods, broken keys, malformed multipart. No answer is a 5xx, and every error
 * answer is `{ error: { code, message } }` with a code from the stable list.
 */
const SEED = 4242;
const DEADLINE_MS = 240_000;

let fake: FakeOpenAI;
let e2e: E2EPortal;
let targets: FuzzTargets;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  e2e = await startE2EPortal(fake);
  const alice = e2e.api('alice');
  const mallory = e2e.api('mallory');
  const chat = await e2e.conversation('alice', 'helper');
  const { turnId, blockId } = await pausedOnApproval(e2e, chat, 'fuzz');
  const theirs = await e2e.conversation('mallory', 'rival');
  const theirTurn = (await theirs.run('hello from globex')).turnId;
  const skills = (await alice.get('/v1/skills')).body as { id: string; slug: string }[];
  const theirSkills = (await mallory.get('/v1/skills')).body as { id: string; slug: string }[];
  const talk = await e2e.conversation('alice', 'helper');
  targets = {
    conversationId: chat.id,
    messageConversationId: talk.id,
    turnId,
    blockId,
    agentId: 'helper',
    skillId: skills.find((s) => s.slug === 'fact-check')!.id,
    attachmentId: await uploadText(e2e, 'alice', 'notes.txt', 'Alice notes.', chat.id),
    otherOrg: {
      conversationId: theirs.id,
      turnId: theirTurn,
      agentId: 'rival',
      skillId: theirSkills[0].id,
      attachmentId: await uploadText(e2e, 'mallory', 'theirs.txt', 'Globex notes.', theirs.id),
    },
  };
}, 90_000);

afterAll(async () => {
  closeRawAgent();
  await e2e?.stop();
  await fake?.close();
});

describe('request fuzzer', () => {
  it('answers every fuzzed request of every endpoint without a 5xx, errors always { error: { code, message } }', async () => {
    const cases = requestFuzzCases(targets, { seed: SEED, generatedPerEndpoint: 25 });
    expect(cases.length).toBeGreaterThan(1000);
    const deadline = Date.now() + DEADLINE_MS;
    const results: { c: FuzzCase; res: RawResponse; problem: string | null }[] = [];
    for (const c of cases) {
      if (Date.now() > deadline) break;
      const res = await sendRaw(e2e.portal.baseURL, c, { apiKey: E2E_KEYS.alice });
      results.push({ c, res, problem: errorShapeProblem(c.method, res) });
    }
    expect(results.length).toBe(cases.length); // finished within the deadline

    const problems = results.filter((r) => r.problem);
    const byEndpoint = new Map<string, RawResponse[]>();
    for (const r of results) byEndpoint.set(r.c.endpoint, [...(byEndpoint.get(r.c.endpoint) ?? []), r.res]);
    const gatewayErrors = errorLogLines(e2e.portal.logs.gateway);
    const server5xx = results.filter((r) => r.res.status >= 500);
    console.log(
      [
        `Request fuzzer (seed ${SEED}): ${results.length} requests over ${byEndpoint.size} endpoints`,
        textTable(
          ['requests tried', '5xx', 'bad error bodies', 'failed requests', 'gateway error log lines'],
          [
            [
              results.length,
              server5xx.length,
              problems.length - server5xx.length,
              results.filter((r) => r.res.failure).length,
              gatewayErrors.length,
            ],
          ],
        ),
        '',
        'By status: ' + JSON.stringify(tally(results.map((r) => r.res.status))),
        'By code:   ' + JSON.stringify(tally(results.map((r) => codeOf(r.res)))),
        '',
        textTable(
          ['endpoint', 'requests', 'statuses'],
          [...byEndpoint.entries()]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([endpoint, answers]) => [
              endpoint,
              answers.length,
              JSON.stringify(tally(answers.map((a) => a.status))),
            ]),
        ),
        ...(problems.length
          ? [
              '',
              'Problems:',
              ...problems.map(
                (p) => `  ${p.c.method} ${p.c.path.slice(0, 80)} [${p.c.mutation}]: ${p.problem}`,
              ),
            ]
          : []),
        ...(gatewayErrors.length
          ? ['', 'Gateway error log:', ...gatewayErrors.slice(0, 20).map((l) => `  ${l.slice(0, 1500)}`)]
          : []),
      ].join('\n'),
    );

    expect(problems.map((p) => `${p.c.endpoint} [${p.c.mutation}]: ${p.problem}`)).toEqual([]);
    expect(server5xx).toHaveLength(0);
    // Nothing the fuzzer sent made the gateway log an error (a 500, a stream that died).
    expect(gatewayErrors).toEqual([]);
    // Every service still up after it.
    for (const app of ['gateway', 'turn-orchestrator', 'attachment-ingest', 'compaction-worker'] as const) {
      expect([app, (await fetch(e2e.portal.healthURL(app))).status]).toEqual([app, 200]);
    }
  }, 360_000);
});
