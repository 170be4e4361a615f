import { ConversationId, OrgId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createDataSource, createScratchDatabase, type ScratchDatabase } from '../data-source';
import {
  bulkTurns,
  newConversation,
  planScans,
  QueryLog,
  replayedScans,
  seedOrg,
  settledTurn,
} from '../testing/dal.fixtures';
import { BlockRepository } from '../repositories/block.repository';
import { PersonRequestRepository } from '../repositories/person-request.repository';
import { UsageRepository } from '../repositories/usage.repository';
import { CompactionRepository, type KeyedBlock } from './compaction.repository';

const ORG = OrgId('acme');
const OTHER = OrgId('globex');

let db: ScratchDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'dal_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  await seedOrg(ds, ORG);
  await seedOrg(ds, OTHER);
});
afterAll(async () => {
  await db.drop();
});

describe("the compaction's reads of a long conversation: cost", () => {
  const lengths = [1000, 5000];
  const conversations: ConversationId[] = [];
  let log: QueryLog;
  let logged: DataSource;

  beforeAll(async () => {
    // Another conversation makes the tables large enough that the planner's choices are real ones.
    await bulkTurns(ds, OTHER, await newConversation(ds, OTHER), { to: 10_000 });
    for (const length of lengths) {
      conversations.push(await newConversation(ds, ORG));
      await bulkTurns(ds, ORG, conversations.at(-1)!, { to: length });
    }
    await ds.query('ANALYZE');
    log = new QueryLog();
    logged = await createDataSource(db.url, { logger: log }).initialize();
  });
  afterAll(async () => {
    await logged.destroy();
  });

  it('reads a page of the newest requests with one range scan, touching rows of the page only, at any length', async () => {
    const statements: string[] = [];
    for (const [i, length] of lengths.entries()) {
      log.queries = [];
      const read = await new PersonRequestRepository(logged).readBefore(
        ORG,
        ConversationId(conversations[i]),
        {
          before: { turnN: length + 1, seq: 0 },
          limit: 32,
        },
      );
      expect(read.map((r) => [r.turnN, r.text])).toEqual(
        Array.from({ length: 32 }, (_, k) => [length - 31 + k, `turn ${length - 31 + k}`]),
      );
      statements.push(log.queries.map((q) => q.sql).join('\n'));
      // One SELECT, which stops at the page: no read of the whole conversation, whatever its
      // statistics say of its length.
      expect(await replayedScans(ds, log.queries)).toEqual([
        [
          {
            type: 'Index Scan',
            relation: 'person_requests',
            index: 'person_requests_position_idx',
            rows: 32,
          },
        ],
      ]);
    }
    expect(statements[1]).toEqual(statements[0]);
  });
  it('asks whether anything was written since the last compaction with a few index probes', async () => {
    log.queries = [];
    expect(
      await new CompactionRepository(logged).writtenSinceLastCompaction(
        ORG,
        ConversationId(conversations[1]),
      ),
    ).toBe(true);
    const [q] = log.queries;
    for (const scan of await planScans(ds, q.sql, q.params)) {
      expect(scan.type).not.toBe('Seq Scan');
      expect(scan.rows).toBeLessThanOrEqual(2);
    }
  });
});

describe('appendOnce: the compaction blocks pass the block rules on append (SPEC 8)', () => {
  const summary = (text: string, from: number): KeyedBlock => ({
    id: randomUUID(),
    kind: 'compaction',
    summary: text,
    trigger: 'MANUAL',
    coversTurns: { from, to: 1 },
  });

  it.each([
    ['an empty summary', summary(' ', 1)],
    ['turns covered from 2, not 1', summary('Summary of turns 2–1', 2)],
  ])('refuses a MANUAL block with %s, writing neither it nor the usage row', async (_why, block) => {
    const conversationId = await newConversation(ds, ORG);
    const turn = await settledTurn(ds, ORG, conversationId, { kind: 'compaction', status: 'running' });
    const line: KeyedBlock = {
      id: randomUUID(),
      kind: 'text',
      text: 'Context summarised: turns 1–1.',
      narration: false,
      steering: false,
    };
    const usage = {
      turnId: turn.id,
      kind: 'compaction' as const,
      model: 'gpt-test',
      inputTokens: 9,
      outputTokens: 1,
      cachedTokens: 0,
      cost: 0,
      callKey: 'manual',
    };
    const appending = new CompactionRepository(ds).appendOnce(ORG, turn.id, [block, line], {
      status: 'running',
      usage,
    });
    await expect(appending).rejects.toMatchObject({
      code: 'invariant_violated',
      details: { violations: [expect.objectContaining({ code: 'compaction_invalid' })] },
    });
    const blocks = await new BlockRepository(ds).listTurnMessages(ORG, turn.id);
    expect(blocks.flatMap((m) => m.blocks.map((b) => b.kind))).toEqual(['text']);
    expect(await new UsageRepository(ds).listForTurn(ORG, turn.id)).toEqual([]);
  });
});
