import {
  type Block,
  type CompactionBlock,
  ConversationId,
  OrgId,
  type TextBlock,
  type TurnTranscript,
} from '@portal/domain';
import type { DataSource } from 'typeorm';
import { createDataSource, createScratchDatabase, type ScratchDatabase } from '../data-source';
import {
  answer,
  bulkTurns,
  newConversation,
  planScans,
  QueryLog,
  seedOrg,
  settledTurn,
} from '../testing/dal.fixtures';
import { TurnRepository } from './turn.repository';
import { WindowRepository } from './window.repository';

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

function compaction(
  to: number,
  trigger: CompactionBlock['trigger'] = 'MANUAL',
): Omit<CompactionBlock, 'id' | 'seq'> {
  return { kind: 'compaction', summary: `Summary of turns 1–${to}`, trigger, coversTurns: { from: 1, to } };
}

const userText = (t: TurnTranscript) => (t.messages[0].blocks[0] as TextBlock).text;

describe('WindowRepository.readWindow', () => {
  let conversationId: string;

  // Turns 1–3, manual compaction turn 4, turns 5–30 (some failed or cut off), turn 31 running.
  beforeAll(async () => {
    conversationId = await newConversation(ds, ORG);
    for (let n = 1; n <= 3; n++)
      await settledTurn(ds, ORG, ConversationId(conversationId), {
        text: `t${n}`,
        blocks: [answer(`a${n}`)],
      });
    await settledTurn(ds, ORG, ConversationId(conversationId), {
      text: '/compact',
      kind: 'compaction',
      blocks: [compaction(3), answer('Context summarised: turns 1–3.')],
    });
    for (let n = 5; n <= 30; n++) {
      const status = n === 12 ? 'failed' : n === 13 ? 'cut_off' : 'completed';
      await settledTurn(ds, ORG, ConversationId(conversationId), {
        text: `t${n}`,
        status,
        blocks: status === 'failed' ? [] : [answer(`a${n}`)],
      });
    }
    await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: ConversationId(conversationId),
      effort: 'low',
      model: 'm',
      text: 't31',
    });
  });

  it('returns the newest summary and the last 20 settled turns after it, oldest first', async () => {
    const window = await new WindowRepository(ds).readWindow(ORG, ConversationId(conversationId), {
      beforeTurnN: 31,
    });
    expect(window.summary).toMatchObject({
      turnN: 4,
      block: { kind: 'compaction', seq: 2, coversTurns: { from: 1, to: 3 } },
    });
    expect(window.turns.map((t) => t.turn.n)).toEqual(Array.from({ length: 20 }, (_, i) => 11 + i));
    expect(window.turns.map((t) => t.turn.status).slice(1, 3)).toEqual(['failed', 'cut_off']);
    const turn14 = window.turns.find((t) => t.turn.n === 14)!;
    expect(turn14.messages.map((m) => [m.role, m.blocks.map((b: Block) => [b.seq, b.kind])])).toEqual([
      ['user', [[1, 'text']]],
      ['assistant', [[2, 'text']]],
    ]);
    expect(userText(turn14)).toBe('t14');
    expect(window.turns.find((t) => t.turn.n === 12)!.messages.map((m) => m.role)).toEqual(['user']);
  });

  it('honours turnsReplayed and leaves open turns out', async () => {
    const repo = new WindowRepository(ds);
    expect(
      (await repo.readWindow(ORG, ConversationId(conversationId), { turnsReplayed: 3 })).turns.map(
        (t) => t.turn.n,
      ),
    ).toEqual([28, 29, 30]);
    const all = await repo.readWindow(ORG, ConversationId(conversationId), { turnsReplayed: Infinity });
    expect(all.turns.map((t) => t.turn.n)).toEqual(Array.from({ length: 26 }, (_, i) => 5 + i));
    expect((await repo.readWindow(ORG, ConversationId(conversationId), { turnsReplayed: 0 })).turns).toEqual(
      [],
    );
  });

  it('reads the window as it was before an earlier turn', async () => {
    const window = await new WindowRepository(ds).readWindow(ORG, ConversationId(conversationId), {
      beforeTurnN: 8,
    });
    expect(window.summary?.turnN).toBe(4);
    expect(window.turns.map(userText)).toEqual(['t5', 't6', 't7']);
    const beforeCompaction = await new WindowRepository(ds).readWindow(ORG, ConversationId(conversationId), {
      beforeTurnN: 4,
    });
    expect(beforeCompaction.summary).toBeNull();
    expect(beforeCompaction.turns.map((t) => t.turn.n)).toEqual([1, 2, 3]);
  });

  it('takes an AUTO summary from inside a normal turn, which is replayed from the summary on', async () => {
    const id = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, id, { text: 't1', blocks: [answer('a1')] });
    await settledTurn(ds, ORG, id, {
      text: 't2',
      blocks: [{ kind: 'thinking', text: 'long' }, compaction(2, 'AUTO'), answer('a2')],
    });
    await settledTurn(ds, ORG, id, { text: 't3', blocks: [answer('a3')] });
    const window = await new WindowRepository(ds).readWindow(ORG, id);
    expect(window.summary).toMatchObject({ turnN: 2, block: { trigger: 'AUTO', seq: 3 } });
    expect(window.turns.map((t) => t.turn.n)).toEqual([2, 3]);
    // While turn 2 runs, its own summary belongs to its messages, not to the window.
    const during = await new WindowRepository(ds).readWindow(ORG, id, { beforeTurnN: 2 });
    expect(during.summary).toBeNull();
    expect(during.turns.map((t) => t.turn.n)).toEqual([1]);
  });

  it('reads the same turns without the summary with readTurns', async () => {
    const repo = new WindowRepository(ds);
    for (const opts of [{ beforeTurnN: 31 }, { turnsReplayed: 3 }, { beforeTurnN: 8 }, { beforeTurnN: 4 }]) {
      const window = await repo.readWindow(ORG, ConversationId(conversationId), opts);
      expect(await repo.readTurns(ORG, ConversationId(conversationId), opts)).toEqual(window.turns);
    }
    // Bounded by the summary still: the turns before the compaction stay out.
    const turns = await repo.readTurns(ORG, ConversationId(conversationId), { turnsReplayed: Infinity });
    expect(turns.map((t) => t.turn.n)).toEqual(Array.from({ length: 26 }, (_, i) => 5 + i));
    expect(await repo.readTurns(OTHER, ConversationId(conversationId))).toEqual([]);
  });

  it('reads nothing of another org', async () => {
    const repo = new WindowRepository(ds);
    expect(await repo.readWindow(OTHER, ConversationId(conversationId))).toEqual({
      summary: null,
      turns: [],
    });
    expect(await repo.readWindow(ORG, ConversationId('not-a-uuid'))).toEqual({ summary: null, turns: [] });
  });
});

/** A conversation of `length` turns whose manual compaction sits 25 turns before the end. */
async function conversationOf(length: number): Promise<string> {
  const id = await newConversation(ds, ORG);
  await bulkTurns(ds, ORG, id, { to: length - 26 });
  await settledTurn(ds, ORG, id, {
    text: '/compact',
    kind: 'compaction',
    blocks: [compaction(length - 26), answer('done')],
  });
  await bulkTurns(ds, ORG, id, { from: length - 24, to: length });
  return id;
}

describe('WindowRepository.readWindow cost', () => {
  // 25 turns follow the newest summary in the first two; the third has no summary at all.
  const lengths = [30, 300, 3000];
  const conversations: string[] = [];
  let log: QueryLog;
  let logged: DataSource;

  beforeAll(async () => {
    // Other conversations make the tables large enough that the planner's choices are real ones.
    await bulkTurns(ds, OTHER, await newConversation(ds, OTHER), { to: 20_000 });
    conversations.push(await conversationOf(30), await conversationOf(300), await newConversation(ds, ORG));
    await bulkTurns(ds, ORG, ConversationId(conversations[2]), { to: 3000 });
    await ds.query('ANALYZE');
    log = new QueryLog();
    logged = await createDataSource(db.url, { logger: log }).initialize();
  }, 120_000); // 23,000 turns to write: slow when the 2 cores are busy
  afterAll(async () => {
    await logged.destroy();
  });

  async function read(conversationId: string) {
    log.queries = [];
    const window = await new WindowRepository(logged).readWindow(ORG, ConversationId(conversationId), {
      turnsReplayed: 20,
    });
    return { window, queries: [...log.queries] };
  }

  it('returns the summary and the last 20 turns at every length', async () => {
    for (const [i, length] of lengths.entries()) {
      const { window } = await read(conversations[i]);
      expect(window.summary?.turnN).toBe(i < 2 ? length - 25 : undefined);
      expect(window.turns.map((t) => t.turn.n)).toEqual(
        Array.from({ length: 20 }, (_, k) => length - 19 + k),
      );
    }
  });

  it('sends the same one statement whatever the length', async () => {
    const statements: string[][] = [];
    for (const id of conversations) statements.push((await read(id)).queries.map((q) => q.sql));
    expect(statements[0]).toHaveLength(1);
    expect(statements[1]).toEqual(statements[0]);
    expect(statements[2]).toEqual(statements[0]);
  });

  it('reads every table through an index and touches rows of the window only', async () => {
    for (const id of conversations) {
      const { queries } = await read(id);
      for (const q of queries) {
        const plan = await planScans(ds, q.sql, q.params);
        expect(plan.some((s) => s.index)).toBe(true);
        for (const scan of plan) {
          expect(scan.type).not.toBe('Seq Scan');
          // At most the 25 turns after the summary, two messages or blocks each; the longest
          // conversation holds 6000 of each.
          expect(scan.rows).toBeLessThanOrEqual(50);
        }
      }
    }
  });
});
