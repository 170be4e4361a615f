import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { figure } from './stats.util';

/** Issue #29's targets for a one-call turn on this 2-core machine (bench:turns, bench:turn-floor). */
export const TURN_TARGETS = { addedP50Ms: 8, addedP99Ms: 25, turnsPerSecond: 180, cpuPerTurnMs: 6 };

export type ChatBody = Omit<ChatCompletionCreateParamsStreaming, 'stream' | 'stream_options'>;

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

type CpuSoFar = { cpu: Record<string, number | null> };

/** CPU ms per turn of each process between two readings. */
export function cpuPerTurn(before: CpuSoFar, after: CpuSoFar, turns: number): [string, number][] {
  return Object.keys(after.cpu).map((name) => {
    const [a, b] = [after.cpu[name], before.cpu[name]];
    return [name, a === null || b === null ? NaN : (a - b) / turns];
  });
}

/**
 * Prints CPU per turn of each process, sequential and under load, and returns what the gateway,
 * the orchestrator and Postgres spent per turn under load (the bench client and Redis left out).
 */
export function printCpuPerTurn(seq: [string, number][], load: [string, number][], width: number): number {
  const fmt = (ms: number) => figure(ms).padStart(8);
  console.log(
    `\nCPU time per turn (ms; /proc user+system)${''.padEnd(width - 41)}${'seq'.padStart(8)}${'load'.padStart(8)}`,
  );
  seq.forEach(([name, ms], i) => console.log(`  ${name.padEnd(width - 2)}${fmt(ms)}${fmt(load[i][1])}`));
  const served = load
    .filter(([n]) => !n.startsWith('bench') && !n.startsWith('redis'))
    .reduce((t, [, ms]) => t + ms, 0);
  console.log(
    `  => gateway + orchestrator + Postgres: ${served.toFixed(1)} ms of CPU per turn under load: at most ~${(1000 / served).toFixed(0)} turns/s per core   (target ≤ ${TURN_TARGETS.cpuPerTurnMs})`,
  );
  return served;
}
