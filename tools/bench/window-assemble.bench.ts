import { deepStrictEqual, equal, match } from 'node:assert/strict';
import {
  assertInvariants,
  type Block,
  ConversationId,
  type MemoryWindow,
  OrgId,
  type TurnTranscript,
} from '@portal/domain';
import { replayedTurns, resolveLimits, shownCalls } from '@portal/prompt';
import {
  type BenchRow,
  inMemoryWindowLoader,
  main as assembleBench,
  type WindowLoader,
} from '../../libs/prompt/bench/assemble.bench';
import type { DataSource } from 'typeorm';
import { createDataSource, createScratchDatabase } from '../../libs/dal/src/data-source';
import { BlockRepository } from '../../libs/dal/src/repositories/block.repository';
import { PersonRequestRepository } from '../../libs/dal/src/repositories/person-request.repository';
import { ToolResultRepository } from '../../libs/dal/src/repositories/tool-result.repository';
import { WindowRepository } from '../../libs/dal/src/repositories/window.repository';
import { newConversation, QueryLog, seedOrg, type PlanNode } from '../../libs/dal/src/testing/dal.fixtures';

/**
 * The prompt bench (`libs/prompt/bench/assemble.bench.ts`) with the memory window read from
 * Postgres: a conversation of 100 turns against one of 10,000, each turn with 10 tool calls of
 * 1,000-character results. The store read (WindowRepository.readWindow) must cost O(window), as the
 * assembly does. Run with `npm run bench:prompt`; `--explain` also prints the read's full plans.
 *
 * The bench database is created fresh (migrated like the test databases) and dropped at the end.
 */

const ORG = OrgId('bench');
const LENGTHS = [100, 10_000];
/** Timed store reads and timed assemblies (each cold and warm) per conversation. */
const RUNS = 50;
/** Untimed store reads first: the pool's connections, the catalogue caches, the JIT. */
const WARM_UP_READS = 20;

const CALLS_PER_TURN = 10;
const RESULT_CHARS = 1000;
const FILLER = 'Revenue by quarter and region, with notes. '.repeat(30);
/** Block seqs within a turn: user text 1, thinking 2, narration 3, the calls' uses, results, answer. */
const FIRST_USE_SEQ = 4;
const FIRST_RESULT_SEQ = FIRST_USE_SEQ + CALLS_PER_TURN;
const ANSWER_SEQ = FIRST_RESULT_SEQ + CALLS_PER_TURN;

/**
 * Writes `length` completed turns in set-based SQL, the rows the repositories write turn by turn:
 * the user message (seq 1) with its text block (seq 1); the assistant message (seq 2) with
 * thinking, narration, CALLS_PER_TURN tool uses, their results (each also a `tool_results` row
 * under its `tr_<16 hex>` ref) and the answer, the blocks numbered on from 2 across the turn.
 * Payloads are the domain blocks less id, seq and kind (toBlockPayload). Shapes follow the prompt
 * bench's in-memory turns. Then the person's requests (`person_requests`) from those messages.
 * `requestTail` is appended to every question (the compaction bench's long requests).
 */
export async function seedConversation(ds: DataSource, length: number, requestTail = ''): Promise<string> {
  const conversationId = await newConversation(ds, ORG);
  await ds.transaction(async (em) => {
    await em.query(
      `INSERT INTO turns (org_id, conversation_id, n, kind, status, effort, model)
       SELECT $1, $2, n, 'turn', 'completed', 'low', 'gpt-test' FROM generate_series(1, $3::int) AS n`,
      [ORG, conversationId, length],
    );
    await em.query(`UPDATE conversations SET last_turn_n = $3 WHERE org_id = $1 AND id = $2`, [
      ORG,
      conversationId,
      length,
    ]);
    await em.query(
      `INSERT INTO messages (org_id, conversation_id, turn_id, seq, role)
       SELECT t.org_id, t.conversation_id, t.id, m.seq, m.role
       FROM turns t CROSS JOIN (VALUES (1, 'user'), (2, 'assistant')) AS m (seq, role)
       WHERE t.org_id = $1 AND t.conversation_id = $2`,
      [ORG, conversationId],
    );
    await em.query(
      `WITH turn AS (
         SELECT t.id, t.n, mu.id AS user_message_id, ma.id AS message_id
         FROM turns t
         JOIN messages mu ON mu.turn_id = t.id AND mu.seq = 1
         JOIN messages ma ON ma.turn_id = t.id AND ma.seq = 2
         WHERE t.org_id = $1 AND t.conversation_id = $2
       ), call AS (
         SELECT turn.id AS turn_id, turn.n, turn.message_id, i, format('t%s_c%s', turn.n, i) AS call_id,
           'tr_' || left(md5(turn.id::text || '/' || i), 16) AS ref
         FROM turn CROSS JOIN generate_series(0, $4::int - 1) AS i
       ), result AS (
         INSERT INTO tool_results (ref, org_id, conversation_id, turn_id, call_id, content)
         SELECT ref, $1, $2, turn_id, call_id, left(format('Result of %s: ', call_id) || $3, $5::int)
         FROM call
         RETURNING turn_id, call_id, ref, content
       )
       INSERT INTO blocks (org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
       SELECT $1, $2, b.turn_id, b.n, b.message_id, b.seq, b.kind, b.payload
       FROM (
         SELECT id AS turn_id, n, user_message_id AS message_id, 1 AS seq, 'text' AS kind,
           jsonb_build_object('text', format('Question %s: how did region %s do?', n, n % 7) || $9,
             'narration', false, 'steering', false) AS payload
         FROM turn
         UNION ALL
         SELECT id, n, message_id, 2, 'thinking', jsonb_build_object('text', 'Let me think about the regions.')
         FROM turn
         UNION ALL
         SELECT id, n, message_id, 3, 'text',
           jsonb_build_object('text', 'Looking it up.', 'narration', true, 'steering', false)
         FROM turn
         UNION ALL
         SELECT turn_id, n, message_id, $6::int + i, 'tool_use',
           jsonb_build_object('callId', call_id, 'name', 'search_attachments',
             'arguments', format('{"query":"region %s turn %s"}', i, n))
         FROM call
         UNION ALL
         SELECT c.turn_id, c.n, c.message_id, $7::int + c.i, 'tool_result',
           jsonb_build_object('callId', c.call_id, 'outcome', 'ok', 'content', r.content, 'ref', r.ref)
         FROM call c JOIN result r USING (turn_id, call_id)
         UNION ALL
         SELECT id, n, message_id, $8::int, 'text',
           jsonb_build_object('text', format('Region %s grew %s%% (page %s).', n % 7, n % 13, n % 40),
             'narration', false, 'steering', false)
         FROM turn
       ) AS b
       ORDER BY b.n, b.seq`,
      [
        ORG,
        conversationId,
        FILLER,
        CALLS_PER_TURN,
        RESULT_CHARS,
        FIRST_USE_SEQ,
        FIRST_RESULT_SEQ,
        ANSWER_SEQ,
        requestTail,
      ],
    );
  });
  // The person's requests, as the gateway stores them with each message.
  await new PersonRequestRepository(ds).recordStored({ conversationId: conversationId });
  return conversationId;
}

/** A message's blocks as seq, kind and the type of each field: what must match, ids and texts aside. */
function shape(turn: TurnTranscript) {
  return {
    turn: { n: turn.turn.n, kind: turn.turn.kind, status: turn.turn.status },
    messages: turn.messages.map((m) => ({
      role: m.role,
      attachmentIds: m.attachmentIds,
      blocks: m.blocks.map((b: Block) =>
        Object.entries(b)
          .map(([key, value]) => `${key}:${key === 'seq' || key === 'kind' ? value : typeof value}`)
          .sort(),
      ),
    })),
  };
}

/**
 * Reads the seeded window back through the repositories and checks it maps to valid domain turns
 * shaped like the prompt bench's in-memory ones, each result's ref naming its stored whole result.
 */
async function verifySeed(ds: DataSource, conversationId: string, length: number): Promise<void> {
  const turnsReplayed = resolveLimits().TURNS_REPLAYED;
  const window = await new WindowRepository(ds).readWindow(ORG, ConversationId(conversationId), {
    turnsReplayed,
    beforeTurnN: length + 1,
  });
  const expected = await inMemoryWindowLoader(turnsReplayed)(length);
  equal(window.summary, null);
  deepStrictEqual(
    window.turns.map((t) => t.turn.n),
    expected.turns.map((t) => t.turn.n),
  );
  deepStrictEqual(window.turns.map(shape), expected.turns.map(shape));
  for (const turn of window.turns) assertInvariants(turn);

  const last = window.turns[window.turns.length - 1];
  deepStrictEqual(await new BlockRepository(ds).listTurnMessages(ORG, last.turn.id), last.messages);
  const toolResults = new ToolResultRepository(ds);
  for (const block of last.messages.flatMap((m) => m.blocks)) {
    if (block.kind !== 'tool_result') continue;
    equal(block.content.length, RESULT_CHARS);
    match(block.ref ?? '', /^tr_[0-9a-f]{16}$/);
    deepStrictEqual(await toolResults.get(ORG, block.ref!), {
      ref: block.ref,
      conversationId,
      turnId: last.turn.id,
      callId: block.callId,
      content: block.content,
    });
  }
  const [{ turns, blocks, results }] = await ds.query(
    `SELECT (SELECT count(*)::int FROM turns WHERE conversation_id = $1) AS turns,
       (SELECT count(*)::int FROM blocks WHERE conversation_id = $1) AS blocks,
       (SELECT count(*)::int FROM tool_results WHERE conversation_id = $1) AS results`,
    [conversationId],
  );
  deepStrictEqual(
    { turns, blocks, results },
    { turns: length, blocks: length * ANSWER_SEQ, results: length * CALLS_PER_TURN },
  );
}

/** The store read as the prompt bench's loader: the window before the turn after the last one. */
function postgresWindowLoader(ds: DataSource, conversations: Map<number, string>): WindowLoader {
  const repo = new WindowRepository(ds);
  const turnsReplayed = resolveLimits().TURNS_REPLAYED;
  return (length) => {
    const conversationId = conversations.get(length);
    if (!conversationId) throw new Error(`no seeded conversation of ${length} turns`);
    return repo.readWindow(ORG, ConversationId(conversationId), { turnsReplayed, beforeTurnN: length + 1 });
  };
}

/** Tool calls the prompt replays from the window (the last CALLS_PER_TURN of each replayed turn). */
function replayedCalls(window: MemoryWindow): number {
  const limits = resolveLimits();
  return replayedTurns(window.turns, limits).reduce((sum, turn) => {
    const callIds = turn.messages.flatMap((m) =>
      m.blocks.flatMap((b) => (b.kind === 'tool_use' ? [b.callId] : [])),
    );
    return sum + shownCalls(callIds, limits).shown.size;
  }, 0);
}

function printSideBySide(rows: BenchRow[], calls: Map<number, number>): void {
  const cols = [
    'conversation turns',
    'calls replayed',
    'read ms',
    'assemble ms (cold)',
    'assemble ms (warm)',
    'read + assemble ms (cold)',
    'read + assemble ms (warm)',
  ];
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(cols[i].length)).join('  ');
  const ms = (v: number) => v.toFixed(3);
  const cells = (r: BenchRow) => [r.loadMs, r.coldMs, r.warmMs, r.loadMs + r.coldMs, r.loadMs + r.warmMs];
  console.log(`\nStore read + assembly, side by side (medians of ${RUNS} runs; the sums add the medians):`);
  console.log(cols.join('  '));
  for (const r of rows) {
    console.log(
      line([String(r.conversationLength), String(calls.get(r.conversationLength)), ...cells(r).map(ms)]),
    );
  }
  if (rows.length >= 2) {
    const [first, last] = [rows[0], rows[rows.length - 1]];
    const a = cells(first);
    console.log(
      line([
        `ratio ${last.conversationLength}/${first.conversationLength}`,
        '',
        ...cells(last).map((v, i) => `${(v / a[i]).toFixed(2)}×`),
      ]),
    );
  }
}

/** EXPLAIN ANALYZE of the statements one readWindow sends, with the parameters it sends them. */
async function explainWindowRead(url: string, conversationId: string, length: number, full: boolean) {
  const log = new QueryLog();
  const logged = await createDataSource(url, { logger: log }).initialize();
  try {
    const repo = new WindowRepository(logged);
    const opts = { turnsReplayed: resolveLimits().TURNS_REPLAYED, beforeTurnN: length + 1 };
    await repo.readWindow(ORG, ConversationId(conversationId), opts); // warm the caches
    log.queries = [];
    await repo.readWindow(ORG, ConversationId(conversationId), opts);
    const queries = [...log.queries];
    console.log(`\nreadWindow at ${length} turns: ${queries.length} statements`);
    for (const [i, q] of queries.entries()) {
      const [row] = await logged.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.sql}`, q.params);
      const plan = row['QUERY PLAN'][0];
      const scans: string[] = [];
      const walk = (node: PlanNode) => {
        if (node['Relation Name'] || node['Index Name']) {
          scans.push(
            `${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}` +
              `${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}` +
              ` (${node['Actual Rows'] * node['Actual Loops']} rows)`,
          );
        }
        node.Plans?.forEach(walk);
      };
      walk(plan.Plan);
      const top: PlanNode = plan.Plan;
      const buffers = `${top['Shared Hit Blocks'] ?? 0} hit + ${top['Shared Read Blocks'] ?? 0} read`;
      const table = /FROM (\w+)/.exec(q.sql)?.[1] ?? '?';
      console.log(
        `  ${i + 1}. ${table}: planning ${plan['Planning Time'].toFixed(3)} ms, execution ` +
          `${plan['Execution Time'].toFixed(3)} ms, buffers ${buffers}; ${scans.join('; ') || 'no scan'}`,
      );
      if (full) {
        const text: { 'QUERY PLAN': string }[] = await logged.query(
          `EXPLAIN (ANALYZE, BUFFERS) ${q.sql}`,
          q.params,
        );
        console.log(text.map((r) => `       ${r['QUERY PLAN']}`).join('\n'));
      }
    }
  } finally {
    await logged.destroy();
  }
}

export async function run(opts: { explain?: boolean } = {}): Promise<BenchRow[]> {
  const db = await createScratchDatabase({ label: 'dal_bench', serverUrl: process.env['DATABASE_URL'] });
  const onSignal = () => void db.drop().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const ds = db.dataSource;
    await seedOrg(ds, ORG);
    const conversations = new Map<number, string>();
    let start = performance.now();
    for (const length of LENGTHS) {
      const t = performance.now();
      conversations.set(length, await seedConversation(ds, length));
      console.log(
        `seeded ${length} turns (${length * ANSWER_SEQ} blocks, ${length * CALLS_PER_TURN} tool results)` +
          ` in ${((performance.now() - t) / 1000).toFixed(2)} s`,
      );
    }
    const seeded = performance.now() - start;
    start = performance.now();
    await ds.query('ANALYZE');
    console.log(
      `seeding: ${(seeded / 1000).toFixed(2)} s, ANALYZE: ${((performance.now() - start) / 1000).toFixed(2)} s`,
    );
    for (const [length, id] of conversations) await verifySeed(ds, id, length);
    console.log('seed verified: windows read back as valid domain turns shaped like the in-memory ones\n');

    const load = postgresWindowLoader(ds, conversations);
    const calls = new Map<number, number>();
    for (const length of LENGTHS) {
      for (let i = 0; i < WARM_UP_READS; i++) await load(length);
      calls.set(length, replayedCalls(await load(length)));
    }
    const rows = await assembleBench(load, { lengths: LENGTHS, runs: RUNS, loads: RUNS });
    printSideBySide(rows, calls);

    for (const length of LENGTHS) {
      await explainWindowRead(db.url, conversations.get(length)!, length, opts.explain ?? false);
    }
    return rows;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await db.drop();
  }
}

if (require.main === module) {
  run({ explain: process.argv.includes('--explain') }).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
