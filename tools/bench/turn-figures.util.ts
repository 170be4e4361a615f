import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { figure, percentile } from './stats.util';

// Loaded by bench:turn-floor's child processes too: node builtins and libraries only, no portal code.

/** Issue #29's targets for a one-call turn on this 2-core machine (bench:turns, bench:turn-floor). */
export const TURN_TARGETS = {
  addedP50Ms: 8,
  addedP99Ms: 25,
  turnsPerSecond: 180,
  cpuPerTurnMs: 6,
  firstTextMs: 3,
};

/** Sequential turns per conversation in the latency run (memory replays at most 20 past turns). */
const LATENCY_TURNS_PER_CONVERSATION = 20;

/** The width of a report's label column; the figures follow in columns 8 wide. */
export const WIDTH = 58;

/** A figure in its column. */
export const cell = (value: number) => figure(value).padStart(8);

type ChatBody = Omit<ChatCompletionCreateParamsStreaming, 'stream' | 'stream_options'>;

/** One streamed model call through the `openai` SDK: its text and usage. */
export async function streamAnswer(model: OpenAI, body: ChatBody) {
  const stream = await model.chat.completions.create({
    ...body,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  if (!text) throw new Error('the model answered nothing');
  return { text, usage };
}

/** The baseline: `runs` of the same request straight to the model, after 20 that warm the connection and the JIT. */
export async function baselineTimes(baseURL: string, body: ChatBody, runs: number): Promise<number[]> {
  const model = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0 });
  const times: number[] = [];
  for (let i = -20; i < runs; i++) {
    const started = performance.now();
    await streamAnswer(model, body);
    if (i >= 0) times.push(performance.now() - started);
  }
  return times;
}

// --- The turns ---------------------------------------------------------------------------------

/** What both benches' clients record of a turn. */
export interface TurnTiming {
  marker: string;
  postedAt: number;
  acceptedAt: number;
  latencyMs: number;
  status: string;
}

type TurnOf<C, S> = (conversation: C, marker: string) => Promise<S>;

/** `count` turns one after another (markers `seq-i`), in a new conversation every 20. */
export async function sequentialTurns<C, S>(
  count: number,
  open: () => Promise<C>,
  turn: TurnOf<C, S>,
): Promise<S[]> {
  const samples: S[] = [];
  let conversation: C | undefined;
  for (let i = 0; i < count; i++) {
    if (i % LATENCY_TURNS_PER_CONVERSATION === 0) conversation = await open();
    samples.push(await turn(conversation!, `seq-${i}`));
  }
  return samples;
}

/** What a run of concurrent turns gives: the turns, its wall clock and turns per second. */
export interface LoadRun<S> {
  samples: S[];
  wallMs: number;
  turnsPerSecond: number;
}

/**
 * Every conversation at once, each sending `perConversation` turns one after another (markers
 * `<prefix>-c-i`).
 */
export async function concurrentTurns<C, S>(
  conversations: C[],
  perConversation: number,
  turn: TurnOf<C, S>,
  prefix = 'tp',
): Promise<LoadRun<S>> {
  const started = performance.now();
  const samples = (
    await Promise.all(
      conversations.map(async (c, ci) => {
        const out: S[] = [];
        for (let i = 0; i < perConversation; i++) out.push(await turn(c, `${prefix}-${ci}-${i}`));
        return out;
      }),
    )
  ).flat();
  const wallMs = performance.now() - started;
  return { samples, wallMs, turnsPerSecond: samples.length / (wallMs / 1000) };
}

/**
 * Turns run before anything is measured: rounds of `concurrency` new conversations sending
 * `perConversation` turns each, their streams closed after the round; then one conversation as
 * long as the latency run's, so the model's last request is the one the baseline replays. A fresh
 * service is not yet what it is after days of work: for its first few thousand turns V8 is still
 * optimising its hot code, on helper threads whose CPU the count includes (docs/benchmarks.md).
 */
export async function warmUp<C extends { events: { close(): void } }>(
  turns: number,
  concurrency: number,
  perConversation: number,
  open: () => Promise<C>,
  turn: TurnOf<C, unknown>,
): Promise<void> {
  for (let round = 0; round * concurrency * perConversation < turns; round++) {
    const conversations = await Promise.all(Array.from({ length: concurrency }, open));
    await concurrentTurns(conversations, perConversation, turn, `warm${round}`);
    for (const c of conversations) c.events.close();
  }
  const last = await open();
  for (let i = 0; i < LATENCY_TURNS_PER_CONVERSATION; i++) await turn(last, `warm-${i}`);
}

// --- The report --------------------------------------------------------------------------------

/** A row: the label, then the p50, p99 and max of `values`, then `after` (a target). */
export function printPercentiles(label: string, values: number[], after = ''): void {
  console.log(
    `${label.padEnd(WIDTH)}${cell(percentile(values, 50))}${cell(percentile(values, 99))}${cell(Math.max(...values))}${after}`,
  );
}

/**
 * The latency rows of `who` ('portal' or 'floor'): the baseline, the model call, POST →
 * turn_finished, POST answered, the added time; with `targets`, a target column. Returns the
 * added time per turn (its latency less its model call as the proxy saw it, `modelMs` by marker).
 */
export function printLatencyRows(
  who: string,
  baseTimes: number[],
  sequential: TurnTiming[],
  modelMs: Map<string, number>,
  targets = false,
): number[] {
  const latencies = sequential.map((s) => s.latencyMs);
  const addedPerTurn = sequential.map((s) => s.latencyMs - (modelMs.get(s.marker) ?? NaN));
  console.log(
    `\n${'(ms)'.padEnd(WIDTH)}${'p50'.padStart(8)}${'p99'.padStart(8)}${'max'.padStart(8)}${targets ? '   target' : ''}`,
  );
  printPercentiles(`baseline: openai SDK stream to the fake (${baseTimes.length})`, baseTimes);
  printPercentiles(
    `  model call as the proxy saw the ${who}'s`,
    sequential.map((s) => modelMs.get(s.marker) ?? NaN),
  );
  printPercentiles(`${who}: POST → turn_finished received (${sequential.length})`, latencies);
  printPercentiles(
    `  POST answered (202)`,
    sequential.map((s) => s.acceptedAt - s.postedAt),
  );
  const pX = (p: number) => cell(percentile(latencies, p) - percentile(baseTimes, p));
  console.log(`${`added: ${who} pX − baseline pX`.padEnd(WIDTH)}${pX(50)}${pX(99)}`);
  printPercentiles(
    `added per turn: latency − its model call`,
    addedPerTurn,
    targets ? `   p50 < ${TURN_TARGETS.addedP50Ms}, p99 < ${TURN_TARGETS.addedP99Ms}` : '',
  );
  return addedPerTurn;
}

/** The rows of the concurrent turns: their latency and the throughput. Returns turns per second. */
export function printLoadRows(concurrency: number, run: LoadRun<TurnTiming>, targets = false): number {
  printPercentiles(
    `under load (${concurrency} conversations): latency`,
    run.samples.map((s) => s.latencyMs),
  );
  console.log(
    `throughput: ${run.samples.length} turns in ${(run.wallMs / 1000).toFixed(2)} s over ${concurrency} conversations = ${run.turnsPerSecond.toFixed(1)} turns/s${targets ? `   (target ≥ ${TURN_TARGETS.turnsPerSecond})` : ''}`,
  );
  return run.turnsPerSecond;
}

/** The readings a stretch of turns is measured between (cpu.util's turnAccounts). */
interface Readings {
  /** CPU ms so far per process. */
  cpu: Record<string, number | null>;
  /** Commands the Redis server has run so far (whole server). */
  redisCommands: number;
}

/** CPU ms per turn of each process between two readings. */
export function cpuPerTurn(before: Readings, after: Readings, turns: number): [string, number][] {
  return Object.keys(after.cpu).map((name) => {
    const [a, b] = [after.cpu[name], before.cpu[name]];
    return [name, a === null || b === null ? NaN : (a - b) / turns];
  });
}

/** CPU per turn of the three processes the targets count. */
export interface ServiceCpu {
  gateway: number;
  orchestrator: number;
  postgres: number;
}

/** The gateway's, the orchestrator's and Postgres's figures in a `cpuPerTurn` list. */
export function cpuByService(perTurn: [string, number][]): ServiceCpu {
  const of = new Map(perTurn);
  return {
    gateway: of.get('gateway')!,
    orchestrator: of.get('turn-orchestrator')!,
    postgres: of.get('postgres (bench db backends)')!,
  };
}

/** Redis commands per turn (whole server) between two readings. */
export function redisCommandsPerTurn(before: Readings, after: Readings, turns: number): number {
  return (after.redisCommands - before.redisCommands) / turns;
}

/**
 * Prints CPU per turn of each process and Redis commands per turn, sequential and under load, and
 * returns what the gateway, the orchestrator and Postgres spent per turn under load (the bench
 * client and Redis left out).
 */
export function printCpuPerTurn(
  seq: [string, number][],
  load: [string, number][],
  redisCommands: [seq: number, load: number],
): number {
  console.log(
    `\nCPU time per turn (ms; /proc user+system)${''.padEnd(WIDTH - 41)}${'seq'.padStart(8)}${'load'.padStart(8)}`,
  );
  seq.forEach(([name, ms], i) => console.log(`  ${name.padEnd(WIDTH - 2)}${cell(ms)}${cell(load[i][1])}`));
  const served = load
    .filter(([n]) => !n.startsWith('bench') && !n.startsWith('redis'))
    .reduce((t, [, ms]) => t + ms, 0);
  console.log(
    `  => gateway + orchestrator + Postgres: ${served.toFixed(1)} ms of CPU per turn under load: at most ~${(1000 / served).toFixed(0)} turns/s per core   (target ≤ ${TURN_TARGETS.cpuPerTurnMs})`,
  );
  console.log(
    `  ${'Redis commands run (whole server)'.padEnd(WIDTH - 2)}${cell(redisCommands[0])}${cell(redisCommands[1])}`,
  );
  return served;
}

/** The figures issue #29 sets targets for; first text where the bench measures it. */
export interface TargetFigures {
  addedP50: number;
  addedP99: number;
  turnsPerSecond: number;
  cpuPerTurn: number;
  firstTextP50?: number;
}

/** Met or MISSED, per target of issue #29. */
export function printVerdicts(f: TargetFigures, of = ''): void {
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const t = TURN_TARGETS;
  const verdicts = [
    `added p50 < ${t.addedP50Ms} ms: ${verdict(f.addedP50 < t.addedP50Ms)}`,
    `added p99 < ${t.addedP99Ms} ms: ${verdict(f.addedP99 < t.addedP99Ms)}`,
    `≥ ${t.turnsPerSecond} turns/s: ${verdict(f.turnsPerSecond >= t.turnsPerSecond)}`,
    `CPU per turn ≤ ${t.cpuPerTurnMs} ms: ${verdict(f.cpuPerTurn <= t.cpuPerTurnMs)}`,
  ];
  if (f.firstTextP50 !== undefined)
    verdicts.push(`first text p50 < ${t.firstTextMs} ms: ${verdict(f.firstTextP50 < t.firstTextMs)}`);
  console.log(`\ntargets (issue #29${of}): ${verdicts.join('; ')}`);
}
