import { type Block, type MemoryWindow, type Message, TurnId, type TurnTranscript } from '@portal/domain';
import { assemblePrompt, resolveLimits, TokenCounter, type AssembleInput } from '../src';

/**
 * Memory must cost O(window), not O(transcript): assembling the window of a 10,000-turn
 * conversation should take about as long as that of a 100-turn one. Run with
 * `npx tsx --conditions=portal-source libs/prompt/bench/assemble.bench.ts`.
 */

/** Reads the memory window of a conversation of the given length; the lead plugs in the Postgres read. */
export type WindowLoader = (conversationLength: number) => MemoryWindow | Promise<MemoryWindow>;

const CALLS_PER_TURN = 10;
const RESULT_CHARS = 1000;
const FILLER = 'Revenue by quarter and region, with notes. '.repeat(30);

type Draft<B> = B extends Block ? Omit<B, 'id' | 'seq'> : never;

function benchTurn(n: number): TurnTranscript {
  let seq = 0;
  const block = (b: Draft<Block>): Block => ({ ...b, id: `t${n}_b${++seq}`, seq }) as Block;
  const calls = Array.from({ length: CALLS_PER_TURN }, (_, i) => `t${n}_c${i}`);
  const message = (id: string, role: Message['role'], blocks: Block[]): Message => ({
    id,
    turnId: TurnId(`t${n}`),
    role,
    blocks,
    attachmentIds: [],
  });
  return {
    turn: { id: TurnId(`t${n}`), n, kind: 'turn', status: 'completed' },
    messages: [
      message(`t${n}_m1`, 'user', [
        block({
          kind: 'text',
          text: `Question ${n}: how did region ${n % 7} do?`,
          narration: false,
          steering: false,
        }),
      ]),
      message(`t${n}_m2`, 'assistant', [
        block({ kind: 'thinking', text: 'Let me think about the regions.' }),
        block({ kind: 'text', text: 'Looking it up.', narration: true, steering: false }),
        ...calls.map((callId, i) =>
          block({
            kind: 'tool_use',
            callId,
            name: 'search_attachments',
            arguments: JSON.stringify({ query: `region ${i} turn ${n}` }),
          }),
        ),
        ...calls.map((callId) => {
          const head = `Result of ${callId}: `;
          return block({
            kind: 'tool_result',
            callId,
            outcome: 'ok',
            content: head + FILLER.slice(0, RESULT_CHARS - head.length),
            ref: `tr_${callId}`,
          });
        }),
        block({
          kind: 'text',
          text: `Region ${n % 7} grew ${n % 13}% (page ${n % 40}).`,
          narration: false,
          steering: false,
        }),
      ]),
    ],
  };
}

/** The default loader: the whole conversation in memory, sliced to its last TURNS_REPLAYED turns. */
export function inMemoryWindowLoader(turnsReplayed = resolveLimits().TURNS_REPLAYED): WindowLoader {
  const conversations = new Map<number, TurnTranscript[]>();
  return (length) => {
    let turns = conversations.get(length);
    if (!turns) {
      turns = Array.from({ length }, (_, i) => benchTurn(i + 1));
      conversations.set(length, turns);
    }
    return { summary: null, turns: turns.slice(-turnsReplayed) };
  };
}

function benchInput(window: MemoryWindow, tokenCounter: TokenCounter): AssembleInput {
  return {
    portalFloor: 'You are the Acme assistant. Answer briefly.',
    agent: { instructions: 'Help with Acme sales figures.', httpTools: [] },
    selectedSkills: [],
    catalogue: [{ slug: 'summarise', description: 'Summarise long documents.' }],
    window,
    newMessage: { text: 'And the total?', attachmentIds: [] },
    currentTurn: [],
    attachments: {},
    model: { contextWindow: 128_000, vision: null, reasoning: false },
    limits: resolveLimits(),
    tokenCounter,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function timed(fn: () => unknown | Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export interface BenchRow {
  conversationLength: number;
  windowTurns: number;
  loadMs: number;
  /** A fresh token counter each run: every string encoded. */
  coldMs: number;
  /** One counter across runs, as a worker reuses it between the calls of a turn. */
  warmMs: number;
  totalTokens: number;
}

export async function main(
  loadWindow: WindowLoader = inMemoryWindowLoader(),
  options: { lengths?: number[]; runs?: number; loads?: number } = {},
): Promise<BenchRow[]> {
  const { lengths = [100, 10_000], runs = 50, loads = 5 } = options;
  const rows: BenchRow[] = [];
  for (const length of lengths) {
    await loadWindow(length); // warm-up (and, in memory, building the conversation)
    const loadTimes: number[] = [];
    let window: MemoryWindow = { summary: null, turns: [] };
    for (let i = 0; i < loads; i++)
      loadTimes.push(await timed(async () => (window = await loadWindow(length))));
    const warm = new TokenCounter();
    for (let i = 0; i < 10; i++) assemblePrompt(benchInput(window, new TokenCounter())); // JIT warm-up
    const cold: number[] = [];
    const hot: number[] = [];
    for (let i = 0; i < runs; i++) {
      cold.push(await timed(() => assemblePrompt(benchInput(window, new TokenCounter()))));
      hot.push(await timed(() => assemblePrompt(benchInput(window, warm))));
    }
    rows.push({
      conversationLength: length,
      windowTurns: window.turns.length,
      loadMs: median(loadTimes),
      coldMs: median(cold),
      warmMs: median(hot),
      totalTokens: assemblePrompt(benchInput(window, warm)).totalTokens,
    });
  }
  print(rows);
  return rows;
}

function print(rows: BenchRow[]): void {
  const cols = [
    'conversation turns',
    'window turns',
    'prompt tokens',
    'load ms',
    'assemble ms (cold)',
    'assemble ms (warm)',
  ];
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(cols[i].length)).join('  ');
  const ms = (v: number) => v.toFixed(3);
  console.log(cols.join('  '));
  for (const r of rows) {
    console.log(
      line([
        String(r.conversationLength),
        String(r.windowTurns),
        String(r.totalTokens),
        ms(r.loadMs),
        ms(r.coldMs),
        ms(r.warmMs),
      ]),
    );
  }
  if (rows.length >= 2) {
    const [first, last] = [rows[0], rows[rows.length - 1]];
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
    console.log(
      line([
        `ratio ${last.conversationLength}/${first.conversationLength}`,
        '',
        '',
        ratio(last.loadMs, first.loadMs),
        ratio(last.coldMs, first.coldMs),
        ratio(last.warmMs, first.warmMs),
      ]),
    );
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
