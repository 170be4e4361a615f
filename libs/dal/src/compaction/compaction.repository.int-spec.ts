import { randomUUID } from 'node:crypto';
import type { Block, CompactionBlock, TextBlock, TurnTranscript } from '@portal/domain';
import type { DataSource } from 'typeorm';
import { createDataSource, createScratchDatabase, type ScratchDatabase } from '../data-source';
import { BlockRepository } from '../repositories/block.repository';
import { TurnRepository } from '../repositories/turn.repository';
import { WindowRepository } from '../repositories/window.repository';
import {
  answer,
  bulkTurns,
  newConversation,
  planScans,
  QueryLog,
  seedOrg,
  settledTurn,
} from '../testing/dal.fixtures';
import { CompactionRepository } from './compaction.repository';

const ORG = 'acme';
const OTHER = 'globex';

let db: ScratchDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'dal_test' });
  ds = db.dataSource;
  await seedOrg(ds, ORG);
  await seedOrg(ds, OTHER);
});
afterAll(async () => {
  await db.drop();
});

const autoSummary = (to: number): Omit<CompactionBlock, 'id' | 'seq'> => ({
  kind: 'compaction',
  summary: `Summary of turns 1–${to}`,
  trigger: 'AUTO',
  coversTurns: { from: 1, to },
});

const said = (turns: TurnTranscript[]) =>
  turns.map((t) => [t.turn.n, t.messages.map((m) => m.blocks.map((b) => (b as TextBlock).text).join('|'))]);

describe('CompactionRepository.readPeople', () => {
  let conversationId: string;

  // Turn 1; turn 2 with an AUTO summary, then a steering message after it; turn 3; turn 4 failed;
  // turn 5 running.
  beforeAll(async () => {
    conversationId = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, conversationId, { text: 't1', blocks: [answer('a1')] });
    const two = await settledTurn(ds, ORG, conversationId, {
      text: 't2 before the summary',
      blocks: [autoSummary(2), answer('a2')],
    });
    const blocks = new BlockRepository(ds);
    const steering = await blocks.addMessage(ORG, two.id, 'user', { seq: 3 });
    await blocks.appendBlocks(ORG, steering!.id, [
      {
        id: randomUUID(),
        seq: 4,
        kind: 'text',
        text: 't2 steered after it',
        narration: false,
        steering: true,
      },
    ] as Block[]);
    await settledTurn(ds, ORG, conversationId, { text: 't3', blocks: [answer('a3')] });
    await settledTurn(ds, ORG, conversationId, { text: 't4', status: 'failed' });
    await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId,
      effort: 'low',
      model: 'm',
      text: 't5',
    });
  });

  const summary = () => new WindowRepository(ds).readWindow(ORG, conversationId, { turnsReplayed: 0 });

  it("returns the person's messages of the settled turns after the summary, oldest first, and only them", async () => {
    const { summary: after } = await summary();
    expect(after).toMatchObject({ turnN: 2, block: { seq: 2 } });
    const turns = await new CompactionRepository(ds).readPeople(ORG, conversationId, {
      after,
      beforeTurnN: 5,
      limit: 10,
    });
    expect(said(turns)).toEqual([
      [2, ['t2 steered after it']],
      [3, ['t3']],
      [4, ['t4']],
    ]);
    expect(turns.flatMap((t) => t.messages.map((m) => m.role))).toEqual(['user', 'user', 'user']);
    expect(turns[0].messages[0].blocks[0]).toMatchObject({ kind: 'text', steering: true });
  });

  it('reads backwards in pages of `limit` turns, each listed', async () => {
    const repo = new CompactionRepository(ds);
    const page = (beforeTurnN: number, limit: number) =>
      repo.readPeople(ORG, conversationId, { after: null, beforeTurnN, limit });
    expect(said(await page(5, 2))).toEqual([
      [3, ['t3']],
      [4, ['t4']],
    ]);
    expect(said(await page(3, 2))).toEqual([
      [1, ['t1']],
      [2, ['t2 before the summary', 't2 steered after it']],
    ]);
    expect(await page(1, 2)).toEqual([]);
  });

  it('reads nothing of another org', async () => {
    const { summary: after } = await summary();
    const repo = new CompactionRepository(ds);
    expect(await repo.readPeople(OTHER, conversationId, { after, beforeTurnN: 5, limit: 10 })).toEqual([]);
    expect(await repo.readPeople(ORG, 'not-a-uuid', { after, beforeTurnN: 5, limit: 10 })).toEqual([]);
  });
});

describe('CompactionRepository.readPeople cost', () => {
  const lengths = [1000, 5000];
  const conversations: string[] = [];
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

  async function page(i: number) {
    log.queries = [];
    const turns = await new CompactionRepository(logged).readPeople(ORG, conversations[i], {
      after: null,
      beforeTurnN: lengths[i] + 1,
      limit: 32,
    });
    return { turns, queries: [...log.queries] };
  }

  it('reads a page of the newest turns through indexes, touching rows of the page only, at any length', async () => {
    const statements: string[][] = [];
    for (const [i, length] of lengths.entries()) {
      const { turns, queries } = await page(i);
      expect(said(turns)).toEqual(
        Array.from({ length: 32 }, (_, k) => [length - 31 + k, [`turn ${length - 31 + k}`]]),
      );
      statements.push(queries.map((q) => q.sql));
      for (const q of queries) {
        const plan = await planScans(ds, q.sql, q.params);
        expect(plan.some((s) => s.index)).toBe(true);
        for (const scan of plan) {
          expect(scan.type).not.toBe('Seq Scan');
          // The page's 32 turns, their 32 messages of the person, and those messages' 32 texts.
          expect(scan.rows).toBeLessThanOrEqual(32);
        }
        // One probe each, through the indexes of the person's messages and of text blocks.
        expect(plan.find((s) => s.relation === 'messages')?.index).toBe('messages_person_idx');
        expect(plan.find((s) => s.relation === 'blocks')?.index).toBe('blocks_text_idx');
      }
    }
    expect(statements[0]).toHaveLength(1);
    expect(statements[1]).toEqual(statements[0]);
  });

  it('asks whether anything was written since the last compaction with a few index probes', async () => {
    log.queries = [];
    expect(await new CompactionRepository(logged).writtenSinceLastCompaction(ORG, conversations[1])).toBe(
      true,
    );
    const [q] = log.queries;
    for (const scan of await planScans(ds, q.sql, q.params)) {
      expect(scan.type).not.toBe('Seq Scan');
      expect(scan.rows).toBeLessThanOrEqual(2);
    }
  });
});
