import { ConversationId, OrgId } from '@portal/domain';
import { performance } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import {
  ApiClient,
  startFakeOpenAI,
  startPortal,
  subscribeEvents,
  type FakeAnswer,
  type FakeOpenAI,
  type FakeRequest,
  type RunningPortal,
} from '@portal/testing';
import { seedConversation } from './window-assemble.bench';
import { createDataSource } from '../../libs/dal/src/data-source';
import { answer, settledTurn } from '../../libs/dal/src/testing/dal.fixtures';
import { figure, median } from './stats.util';
import { startTimingProxy } from './timing-proxy.util';
import { buildServices } from './build.util';

/**
 * `npm run bench:compaction`: the time the portal adds to a manual compaction (SPEC 5), for a
 * conversation of 50 turns against one of 5,000, and one of 2,000 between them: a first compaction's
 * requests section fills its share of the window at about 1,800 requests, so 2,000 against 5,000
 * shows whether anything still grows once the window is full. The built services run as real
 * processes (like the end-to-end tests) with an instant fake model behind a timing proxy.
 * Conversations are seeded straight into the portal's database with the prompt bench's set-based
 * SQL (`seedConversation`: each turn with 10 tool calls of 1,000-character results), then
 * `/compact` is POSTed and timed until the client receives `turn_finished`; the added time is that
 * minus the summary call's time at the proxy (request arrival to the end of the fake's answer).
 * Five cases, median of RUNS each:
 *
 * 1. first compaction: a freshly seeded conversation, so the summary covers all N turns. The prompt
 *    fits the model's context window less the answer's share (the oldest turns are left out, the
 *    oldest requests past their share named by their turns), and the worker reads backwards only
 *    until it is full, so what it reads and sends is bounded by the window, whatever the length. The
 *    model keeps every request;
 * 2. the same with a model that keeps none, so the worker restores them all;
 * 3. next compaction: one more turn after the previous `/compact` (which the rules require), so
 *    the summary covers the previous summary and one turn; it lists the requests from turn 1 again,
 *    within their share. This is what must not grow with length.
 *
 * What a compaction reads and writes grows with its requests section (every request verbatim, up to
 * SUMMARY_REQUESTS_SHARE of the window) and with the summary it carries (whole), both bounded by the
 * window, so the time grows from the shortest length until they are full, then stays flat. The
 * last section isolates the length: conversations of the shortest length whose every request is
 * long enough (REQUEST_TAIL) that their requests fill the share, as the longest conversation's do,
 * side by side with it: 4. their first compaction, and 5. the next one of the last of them.
 *
 * Options: `--runs=N` (default 5), `--lengths=50,2000,5000` (the default; each ratio is to the first).
 */

const arg = (name: string, fallback: number) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
};
const RUNS = arg('runs', 5);
const LENGTHS = (process.argv.find((a) => a.startsWith('--lengths='))?.split('=')[1] ?? '50,2000,5000')
  .split(',')
  .map(Number);
const ORG = OrgId('bench'); // seedConversation's org, agent `researcher` (model `gpt-test`), user alice
const API_KEY = 'pk_bench_compaction_alice';

// --- Timing proxy in front of the fake model -------------------------------------------------

interface ProxyTiming {
  ms: number;
  summary: boolean;
  bytes: number;
}

/** What the proxy records of each model call. */
function describeCall(body: Buffer): Omit<ProxyTiming, 'ms'> {
  return { summary: body.includes('You write the summary that replaces'), bytes: body.length };
}

/** Characters per streamed piece of the summary (see summaryAnswer). */
const SUMMARY_PIECE_CHARS = 400;
/** Manual instructions after which the fake model keeps no request, so the worker restores them all. */
const KEEP_NO_REQUEST = 'Bench: keep no request.';
/**
 * Appended to every request of the short conversations of cases 4 and 5: their 50 requests (about
 * 1,000 tokens each) then take 1.6 × the requests share of the bench model's window, so the oldest
 * are shortened, as the longest conversation's oldest are left out.
 */
const REQUEST_TAIL = Array.from({ length: 110 }, (_, i) => ` Also region ${i % 7}, page ${i}?`).join('');

/**
 * An instant summary as the prompt asks for it: its heading, then every request listed under
 * "Requests to keep" (those an earlier summary keeps among them) copied as one bullet (the line
 * standing for the requests left out included),
 * so the worker checks them all and restores none, as with a model that follows the prompt. It is
 * streamed in pieces of SUMMARY_PIECE_CHARS: word by word, the 85 KB summary of a long conversation
 * is 15,000 stream events, whose parsing in the SDK (about 30 µs each here) a real model's writing
 * time hides, and an instant one would charge to the portal. Asked with KEEP_NO_REQUEST, it keeps
 * none: the worker's restoring path.
 */
function summaryAnswer(request: FakeRequest): FakeAnswer {
  const prompt: string = (request.body?.messages ?? [])
    .map((m: { content?: unknown }) => String(m.content ?? ''))
    .join('\n');
  const heading =
    /Begin with exactly this line: (Summary of turns 1–\d+)/.exec(prompt)?.[1] ?? 'Summary of turns 1–1';
  const listed = prompt.includes(KEEP_NO_REQUEST)
    ? ''
    : (prompt.split('\n## Requests to keep')[1]?.split('\n## ')[0] ?? '');
  const bullets: string[] = [];
  for (const line of listed.split('\n')) {
    const turn = /^(Turns? [\d–]+):$/.exec(line);
    if (turn) bullets.push(`- ${turn[1]}:`);
    else if (line.startsWith('>') && bullets.length > 0)
      bullets.push(`${bullets.pop()} ${line.replace(/^> ?/, '')}`);
  }
  const text = `${heading}\n## Requests\n${bullets.join('\n')}\n## Work done\n- Looked the regions up.`;
  return { text, chunkSize: SUMMARY_PIECE_CHARS };
}

// --- Numbers -----------------------------------------------------------------------------------

const fmt = (ms: number, width = 12) => figure(ms).padStart(width);

// --- One timed compaction ------------------------------------------------------------------------

interface Sample {
  totalMs: number;
  modelMs: number;
  addedMs: number;
  promptKB: number;
}

async function compactOnce(
  portal: RunningPortal,
  timings: ProxyTiming[],
  conversationId: string,
  text = '/compact',
): Promise<Sample> {
  const api = new ApiClient(portal.baseURL, API_KEY);
  const events = await subscribeEvents(
    `${portal.baseURL}/v1/conversations/${conversationId}/events`,
    API_KEY,
  );
  if (events.status !== 200) throw new Error(`events: ${events.status} ${JSON.stringify(events.errorBody)}`);
  try {
    const seen = timings.length;
    const started = performance.now();
    const res = await api.post(`/v1/conversations/${conversationId}/messages`, { text });
    if (res.status !== 202) throw new Error(`/compact: ${res.status} ${JSON.stringify(res.body)}`);
    const turnId = res.body.turnId as string;
    const finished = await events.waitFor(
      (e) => e.data.type === 'turn_finished' && e.data.turnId === turnId,
      { timeoutMs: 300_000 },
    );
    const totalMs = performance.now() - started;
    if (finished.data.status !== 'completed') throw new Error(`compaction ${JSON.stringify(finished.data)}`);
    const calls = timings.slice(seen).filter((t) => t.summary);
    const modelMs = calls.reduce((sum, t) => sum + t.ms, 0);
    const promptKB = calls.reduce((sum, t) => sum + t.bytes, 0) / 1024;
    return { totalMs, modelMs, addedMs: totalMs - modelMs, promptKB };
  } finally {
    events.close();
  }
}

// --- Main ----------------------------------------------------------------------------------------

interface Row {
  length: number;
  first: Sample[];
  /** First compactions whose summary kept no request. */
  restoring: Sample[];
  next: Sample[];
  seedMs: number;
}

/** The shortest length made to do the longest one's work (cases 4 and 5). */
interface LengthAlone {
  first: Sample[];
  next: Sample[];
}

async function main(): Promise<void> {
  buildServices();
  const fake: FakeOpenAI = await startFakeOpenAI({ defaultResponder: summaryAnswer });
  const proxy = await startTimingProxy(fake.baseURL, describeCall);
  let portal: RunningPortal | undefined;
  let ds: DataSource | undefined;
  try {
    portal = await startPortal({
      models: {
        models: [
          {
            id: 'gpt-test',
            model: 'fake-bench',
            baseURL: proxy.url,
            contextWindow: 128_000,
            reasoning: false,
            price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
          },
        ],
      },
      bootstrap: {
        portalFloor: 'You are the bench assistant.',
        orgs: [
          {
            id: ORG,
            users: [{ id: 'alice', role: 'author', apiKey: API_KEY }],
            agents: [
              {
                id: 'researcher',
                name: 'Researcher',
                instructions: 'Research.',
                model: 'gpt-test',
                effort: 'low',
              },
            ],
          },
        ],
      },
    });
    ds = await createDataSource(portal.database.url).initialize();
    const db = ds;

    const seed = async (length: number, requestTail = '') => {
      const started = performance.now();
      const id = await seedConversation(db, length, requestTail);
      return { id, ms: performance.now() - started };
    };
    // The seeds' tables as autovacuum keeps them in production (statistics, so the planner's
    // choices are real ones, and visibility), then their writes flushed: no compaction is timed
    // against a vacuum or a checkpoint of what was just written.
    const settleSeeds = async () => {
      await db.query('VACUUM (ANALYZE) turns, messages, blocks, tool_results, person_requests');
      await db.query('CHECKPOINT');
    };

    // Warm up: connections, caches, the JIT in every process, on the paths of every length (a
    // long conversation's prompt shortens and leaves out requests, which a short one never does).
    const warmUp = [];
    for (const length of [LENGTHS[0], LENGTHS[0], ...LENGTHS]) warmUp.push((await seed(length)).id);
    await settleSeeds();
    for (const id of warmUp) await compactOnce(portal, proxy.timings, id);

    // Every conversation seeded first, then the lengths measured in turn within each run, so a
    // slow moment of the machine falls on both sides of the comparison.
    const rows: Row[] = LENGTHS.map((length) => ({ length, first: [], restoring: [], next: [], seedMs: 0 }));
    const seeded = new Map<Row, string[]>();
    for (const row of rows) {
      const ids: string[] = [];
      for (let run = 0; run < 2 * RUNS; run++) {
        const { id, ms } = await seed(row.length);
        row.seedMs += ms / (2 * RUNS);
        ids.push(id);
      }
      seeded.set(row, ids);
    }
    const longRequestIds: string[] = [];
    for (let run = 0; run < RUNS; run++) longRequestIds.push((await seed(LENGTHS[0], REQUEST_TAIL)).id);
    await settleSeeds();
    const alone: LengthAlone = { first: [], next: [] };
    for (let run = 0; run < RUNS; run++) {
      alone.first.push(await compactOnce(portal, proxy.timings, longRequestIds[run]));
      for (const row of rows) {
        const ids = seeded.get(row)!;
        row.first.push(await compactOnce(portal, proxy.timings, ids[run]));
        row.restoring.push(
          await compactOnce(portal, proxy.timings, ids[RUNS + run], `/compact ${KEEP_NO_REQUEST}`),
        );
      }
    }
    const nextOf = async (conversationId: string, run: number) => {
      await settledTurn(db, ORG, ConversationId(conversationId), {
        text: `One more question ${run}`,
        blocks: [answer(`Answer ${run}.`)],
      });
      return compactOnce(portal!, proxy.timings, conversationId);
    };
    for (let run = 0; run < RUNS; run++) {
      alone.next.push(await nextOf(longRequestIds[RUNS - 1], run));
      for (const row of rows) {
        // One more turn on the last one, so `/compact` is allowed again; the summary covers the
        // previous summary and that turn.
        row.next.push(await nextOf(seeded.get(row)![RUNS - 1], run));
      }
    }
    const added = (samples: Sample[]) => samples.map((s) => s.addedMs.toFixed(0)).join(', ');
    for (const row of rows) {
      console.log(
        `  ${row.length} turns: seeded in ${fmt(row.seedMs, 0)} ms each; first ${added(row.first)} ms; ` +
          `restoring ${added(row.restoring)} ms; next ${added(row.next)} ms`,
      );
    }
    console.log(
      `  ${LENGTHS[0]} turns of long requests: first ${added(alone.first)} ms; next ${added(alone.next)} ms`,
    );
    print(rows, alone);
  } finally {
    if (ds?.isInitialized) await ds.destroy();
    await portal?.stop();
    proxy.server.closeAllConnections();
    await new Promise((resolve) => proxy.server.close(resolve));
    await fake.close();
  }
}

function print(rows: Row[], alone: LengthAlone): void {
  const line = (label: string, pick: (r: Row) => Sample[], field: keyof Sample) => {
    const values = rows.map((r) => median(pick(r).map((s) => s[field])));
    const ratios = values.slice(1).map((v) => `${fmt(v / values[0], 9)}x`);
    console.log(`${label.padEnd(44)}${values.map((v) => fmt(v)).join('')}${ratios.join('')}`);
  };
  console.log(
    `\nCompaction, time the portal adds (median of ${RUNS}; POST /compact to turn_finished minus the summary call at the fake)`,
  );
  console.log(
    `${''.padEnd(44)}${rows.map((r) => `${r.length} turns`.padStart(12)).join('')}${rows
      .slice(1)
      .map(() => 'ratio'.padStart(10))
      .join('')}`,
  );
  console.log('first compaction (summary covers all N turns)');
  line('  added ms', (r) => r.first, 'addedMs');
  line('  total ms', (r) => r.first, 'totalMs');
  line('  summary call at the fake, ms', (r) => r.first, 'modelMs');
  line('  summary prompt, KB', (r) => r.first, 'promptKB');
  console.log('first compaction, the summary keeps no request (the worker restores every one)');
  line('  added ms', (r) => r.restoring, 'addedMs');
  line('  total ms', (r) => r.restoring, 'totalMs');
  console.log('next compaction (previous summary + 1 turn)');
  line('  added ms', (r) => r.next, 'addedMs');
  line('  total ms', (r) => r.next, 'totalMs');
  line('  summary call at the fake, ms', (r) => r.next, 'modelMs');
  line('  summary prompt, KB', (r) => r.next, 'promptKB');
  const longest = rows.at(-1)!;
  const pair = (label: string, short: Sample[], long: Sample[], field: keyof Sample) => {
    const [a, b] = [short, long].map((samples) => median(samples.map((s) => s[field])));
    console.log(`${label.padEnd(44)}${fmt(a)}${fmt(b)}${fmt(b / a, 9)}x`);
  };
  console.log(`the length alone: ${rows[0].length} turns doing the work of ${longest.length}`);
  console.log(
    `${''.padEnd(44)}${`${rows[0].length} turns`.padStart(12)}${`${longest.length} turns`.padStart(12)}${'ratio'.padStart(10)}`,
  );
  console.log('first compaction, the requests filling their share');
  pair('  added ms', alone.first, longest.first, 'addedMs');
  pair('  summary prompt, KB', alone.first, longest.first, 'promptKB');
  console.log('next compaction, the requests filling their share');
  pair('  added ms', alone.next, longest.next, 'addedMs');
  pair('  summary prompt, KB', alone.next, longest.next, 'promptKB');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
