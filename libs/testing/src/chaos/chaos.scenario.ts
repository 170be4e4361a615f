import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  type Block,
  checkTurn,
  type InvariantViolation,
  type Message,
  TurnId,
  type TurnStatus,
} from '@portal/domain';
import { startFakeOpenAI, type FakeAnswer, type FakeOpenAI, type FakeRequest } from '../fake-openai';
import type { SseEvent } from '../e2e/api.client';
import { subscribeEvents, type EventSubscription } from '../e2e/event-stream';
import { E2E_KEYS, isTitleRequest, startE2EPortal, type E2EPortal } from '../e2e/portal.fixtures';
import { PORTAL_APPS } from '../e2e/portal.harness';
import { startOwnPostgres, startOwnRedis, startOwnRedisCluster, type OwnServer } from './chaos-infra.util';

/** The size of a chaos run. */
export interface ChaosOptions {
  conversations: number;
  /** At least; each conversation goes on sending until every disruption has happened. */
  turnsPerConversation: number;
  /** SIGKILLs of the turn-orchestrator, one every few seconds (Redis and Postgres restarts among them). */
  kills: number;
  /** Quiet time after a disruption has recovered, before the next one. */
  pauseMs?: number;
  /** Model streaming pace: one word every `wordDelayMs`; the answer has `answerWords` words. */
  wordDelayMs?: number;
  answerWords?: number;
  /** How long one turn may take, its recoveries included, before it counts as stuck. */
  turnTimeoutMs?: number;
  /** On a 3-master Redis Cluster instead of one server; the Redis restart is then one master's. */
  redisCluster?: boolean;
  log?: (line: string) => void;
  /** Where each service's and Postgres's output goes at the end (`<name>.log`), for a failing run. */
  logsDir?: string;
}

export type DisruptionKind = 'kill' | 'redis' | 'postgres';

export interface Disruption {
  kind: DisruptionKind;
  /** When it began (ms since epoch): the signal, or the server's stop. */
  at: number;
  /** From `at` to the first block or turn settled after it (stream id time), or null if none came. */
  recoveryMs: number | null;
}

export interface TurnOutcome {
  conversation: number;
  n: number;
  turnId: string;
  status: TurnStatus | 'stuck';
  error: string | null;
  violations: InvariantViolation[];
  duplicated: string[];
  lost: string[];
}

export interface ChaosReport {
  turnsRun: number;
  completed: number;
  failed: number;
  stuck: number;
  duplicatedBlocks: number;
  lostBlocks: number;
  invariantViolations: number;
  /**
   * What clients following each conversation's stream (reconnecting with `Last-Event-ID`) received
   * against the store: stored blocks never received finished, received ones not stored or
   * different, settled turns whose end never came, and (allowed) what Redis lost with its data:
   * events it had taken but not yet delivered when it died, of turns publishing then.
   */
  sse: {
    missing: string[];
    mismatched: string[];
    unfinished: string[];
    duplicateEvents: number;
    lostWithRedis: string[];
  };
  disruptions: Disruption[];
  /** Answers to a message other than 202 and 503 `unavailable` (what a store outage must give). */
  badAnswers: string[];
  longestRecoveryMs: number | null;
  /** Events the orchestrator published late for a turn whose stream lacked them (after a crash). */
  resyncedEvents: number;
  turns: TurnOutcome[];
  durationMs: number;
}

/** JSON with the keys sorted, so two equal blocks compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The tag a chaos message carries: conversation and turn number, and whether the model calls a tool. */
const tagOf = (c: number, n: number) => `[chaos:c${c}:t${n}]`;
const TAG = /\[chaos:c(\d+):t(\d+)\]/;
const usesTool = (n: number) => n % 2 === 1;
const narrationOf = (c: number, n: number) => `Looking c${c} t${n} up.`;
const queryOf = (c: number, n: number) => `c${c}-t${n}`;
const answerOf = (c: number, n: number, words: number) =>
  `Answer c${c} t${n}: ${Array.from({ length: words }, (_, i) => `w${i}`).join(' ')}.`;

/**
 * The fake model, deterministic so a call made again after a crash gets the same answer: a turn
 * with an odd number first narrates and calls `lookup`, then (its result in the prompt) answers;
 * an even one answers at once. Answers stream one word every `delayMs`.
 */
function chaosResponder(words: number, delayMs: number) {
  return (request: FakeRequest): FakeAnswer | string => {
    if (isTitleRequest(request)) return 'Chaos conversation';
    const messages: { role: string; content: unknown }[] = request.body?.messages ?? [];
    let current = -1;
    for (let i = messages.length - 1; i >= 0 && current < 0; i--) {
      if (messages[i].role === 'user' && TAG.test(JSON.stringify(messages[i].content))) current = i;
    }
    if (current < 0) return 'No chaos tag.';
    const [, c, n] = TAG.exec(JSON.stringify(messages[current].content))!.map(Number);
    const answered = messages.slice(current + 1).some((m) => m.role === 'tool');
    if (usesTool(n) && !answered) {
      return {
        text: narrationOf(c, n),
        toolCalls: [{ id: `call_c${c}_t${n}`, name: 'lookup', arguments: { query: queryOf(c, n) } }],
        delayMs,
      };
    }
    return { text: answerOf(c, n, words), delayMs };
  };
}

/** What a completed turn must hold, each exactly once, as `kind:identity` keys. */
function expectedKeys(c: number, n: number, words: number): string[] {
  const keys = [`text:${tagOf(c, n)} message ${n}`];
  if (usesTool(n)) {
    keys.push(
      `text:${narrationOf(c, n)}`,
      `tool_use:lookup:${queryOf(c, n)}`,
      `tool_result:lookup:${queryOf(c, n)}`,
    );
  }
  keys.push(`text:${answerOf(c, n, words)}`);
  return keys;
}

function keyOf(block: Block, uses: Map<string, string>): string {
  switch (block.kind) {
    case 'text':
      return `text:${block.text}`;
    case 'tool_use': {
      let query = block.arguments;
      try {
        query = (JSON.parse(block.arguments) as { query: string }).query;
      } catch {
        // kept as sent
      }
      uses.set(block.callId, `lookup:${query}`);
      return `tool_use:${block.name}:${query}`;
    }
    case 'tool_result':
      return `tool_result:${uses.get(block.callId) ?? block.callId}`;
    default:
      return `${block.kind}:${block.id}`;
  }
}

/** A conversation's SSE stream, reconnected with `Last-Event-ID` whenever it ends. */
class FollowedConversation {
  readonly events: SseEvent[] = [];
  duplicateEvents = 0;
  private readonly seen = new Set<string>();
  private current: EventSubscription | undefined;
  private closed = false;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly url: string,
    private readonly apiKey: string,
  ) {}

  async open(): Promise<void> {
    this.current = await subscribeEvents(this.url, this.apiKey);
    if (this.current.status !== 200) throw new Error(`events ${this.url}: ${this.current.status}`);
    void this.pump(this.current);
  }

  /** Collects every event of `sub`, then reconnects after the newest one until closed. */
  private async pump(sub: EventSubscription): Promise<void> {
    await sub
      .waitFor(
        (event) => {
          if (this.seen.has(event.id)) this.duplicateEvents++;
          else {
            this.seen.add(event.id);
            this.events.push(event);
            this.waiters.forEach((w) => w());
          }
          return false;
        },
        { timeoutMs: 24 * 60 * 60 * 1000 },
      )
      .catch(() => undefined);
    while (!this.closed) {
      await sleep(200);
      try {
        const lastEventId = this.events.at(-1)?.id;
        const next = await subscribeEvents(this.url, this.apiKey, lastEventId ? { lastEventId } : {});
        if (next.status !== 200) continue;
        this.current = next;
        if (this.closed) next.close();
        return this.pump(next);
      } catch {
        // the gateway is unreachable for now: try again
      }
    }
  }

  /** Resolves true once `test` accepts an event, false after `timeoutMs`. */
  async waitFor(test: (e: SseEvent) => boolean, timeoutMs: number): Promise<boolean> {
    if (this.events.some(test)) return true;
    return new Promise((resolve) => {
      const check = () => {
        if (!this.events.some(test)) return;
        done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const done = (found: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(found);
      };
      this.waiters.add(check);
    });
  }

  close(): void {
    this.closed = true;
    this.current?.close();
  }
}

/**
 * The chaos scenario (issue #9): every service as a real process on a Redis and a Postgres of the
 * run's own, `conversations` conversations in parallel each sending at least `turnsPerConversation`
 * messages one after another (each after the previous turn settled, so none steers), while the
 * turn-orchestrator is SIGKILLed and started again repeatedly, Redis is restarted once (losing
 * its data) and Postgres once. Returns the figures; the caller asserts on them.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const words = options.answerWords ?? 30;
  const wordDelayMs = options.wordDelayMs ?? 40;
  const pauseMs = options.pauseMs ?? 2_000;
  const turnTimeoutMs = options.turnTimeoutMs ?? 60_000;
  const cleanup: (() => Promise<unknown>)[] = [];
  const followed: FollowedConversation[] = [];
  try {
    const redis = options.redisCluster ? await startOwnRedisCluster(3) : await startOwnRedis();
    cleanup.push(() => redis.stop());
    const postgres: OwnServer = await startOwnPostgres();
    cleanup.push(() => postgres.stop());
    const fake: FakeOpenAI = await startFakeOpenAI();
    cleanup.push(() => fake.close());
    const e2e: E2EPortal = await startE2EPortal(fake, {
      redis: 'nodes' in redis ? { clusterNodes: redis.nodes } : { url: redis.url },
      databaseURL: postgres.url,
      // A killed worker's turn is taken over once its lease lapses; stranded turns (Redis lost
      // its jobs) are looked for every second.
      env: { TURN_LEASE_MS: '3000', RECONCILE_INTERVAL_MS: '1000' },
    });
    cleanup.unshift(() => e2e.stop());
    const { logsDir } = options;
    // First of the clean-up, so a run that throws keeps its evidence too.
    if (logsDir)
      cleanup.unshift(async () => {
        const outputs: [string, string[]][] = [
          ...Object.entries(e2e.portal.logs),
          ['postgres', postgres.logs],
        ];
        for (const [name, lines] of outputs) writeFileSync(path.join(logsDir, `${name}.log`), lines.join(''));
      });
    fake.setDefault(chaosResponder(words, wordDelayMs));
    const api = e2e.api('alice');

    const conversationIds: string[] = [];
    for (let c = 0; c < options.conversations; c++) {
      const created = await api.post('/v1/conversations', { agentId: 'helper' });
      if (created.status !== 201) throw new Error(`conversation: ${created.status}`);
      conversationIds.push(created.body.id as string);
      const follow = new FollowedConversation(
        `${e2e.portal.baseURL}/v1/conversations/${created.body.id}/events`,
        E2E_KEYS.alice,
      );
      await follow.open();
      followed.push(follow);
    }

    /** Every block settled or turn finished, by the stream id's time (ms), as clients received them. */
    const progressAfter = (at: number): number | null => {
      let first: number | null = null;
      for (const f of followed) {
        for (const e of f.events) {
          const time = Number(e.id.split('-')[0]);
          const progress =
            e.data.type === 'turn_finished' ||
            (e.data.type === 'block_finished' && !String(e.data.block?.text ?? '').includes('[chaos:'));
          if (progress && time > at && (first === null || time < first)) first = time;
        }
      }
      return first === null ? null : first - at;
    };

    // --- the conversations ---------------------------------------------------------------------
    const badAnswers: string[] = [];
    let running = options.conversations;
    let chaosOver = false;

    /** Posts the message; after an error, looks whether it was recorded before posting it again. */
    async function open(c: number, n: number): Promise<string> {
      const text = `${tagOf(c, n)} message ${n}`;
      const id = conversationIds[c];
      const deadline = Date.now() + turnTimeoutMs;
      for (;;) {
        const res = await api.post(`/v1/conversations/${id}/messages`, { text }).catch((err: Error) => ({
          status: 0,
          body: { error: err.message } as any,
        }));
        if (res.status === 202 && !res.body.steered) return res.body.turnId as string;
        if (res.status === 202)
          throw new Error(`message ${text} steered a turn: ${JSON.stringify(res.body)}`);
        log(`c${c} t${n}: post answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        if (res.status !== 0 && !(res.status === 503 && res.body?.error?.code === 'unavailable'))
          badAnswers.push(`c${c} t${n}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        if (Date.now() > deadline) throw new Error(`message ${text}: never accepted`);
        await sleep(500);
        const listed = await api.get<Message[]>(`/v1/conversations/${id}/messages`).catch(() => null);
        const mine =
          listed?.status === 200 ? listed.body.find((m) => JSON.stringify(m.blocks).includes(text)) : null;
        if (mine) return mine.turnId;
      }
    }

    /** Waits for the turn to settle: its `turn_finished` on the stream, else the API (polled). */
    async function settle(c: number, turnId: string): Promise<boolean> {
      const deadline = Date.now() + turnTimeoutMs;
      while (Date.now() < deadline) {
        const seen = await followed[c].waitFor(
          (e) => e.data.type === 'turn_finished' && e.data.turnId === turnId,
          1_000,
        );
        if (seen) return true;
        const turn = await api.get(`/v1/turns/${turnId}`).catch(() => null);
        if (turn?.status === 200 && ['completed', 'failed', 'cut_off'].includes(turn.body.status))
          return true;
      }
      return false;
    }

    const conversationsDone = Promise.all(
      conversationIds.map(async (_, c) => {
        try {
          // Every disruption hits turns in flight: no conversation stops before the chaos does.
          for (let n = 1; n <= options.turnsPerConversation || !chaosOver; n++) {
            const turnId = await open(c, n);
            const settled = await settle(c, turnId);
            if (!settled) {
              log(`c${c} t${n}: turn ${turnId} did not settle within ${turnTimeoutMs} ms`);
              break;
            }
          }
        } finally {
          running--;
        }
      }),
    );

    // --- the chaos -----------------------------------------------------------------------------
    const disruptions: Disruption[] = [];
    const plan: DisruptionKind[] = [];
    for (let k = 0; k < options.kills; k++) plan.push('kill');
    // Redis and Postgres each once, spread among the kills.
    plan.splice(Math.ceil(plan.length / 3), 0, 'redis');
    plan.splice(Math.ceil((2 * plan.length) / 3), 0, 'postgres');

    const disrupt = async (kind: DisruptionKind) => {
      const at = Date.now();
      log(`${new Date(at).toISOString()} ${kind}`);
      if (kind === 'kill') {
        await e2e.portal.kill('turn-orchestrator', 'SIGKILL');
        await e2e.portal.start('turn-orchestrator');
      } else if (kind === 'redis') {
        await redis.restart(500);
      } else {
        await postgres.restart(500);
      }
      const disruption: Disruption = { kind, at, recoveryMs: null };
      disruptions.push(disruption);
      // Waits for progress after the disruption before the next one (unless a turn got stuck).
      const limit = Date.now() + turnTimeoutMs;
      while (running > 0 && Date.now() < limit && progressAfter(at) === null) await sleep(100);
      log(`  progress ${progressAfter(at)} ms after the ${kind}`);
    };

    const chaosDone = (async () => {
      try {
        for (const kind of plan) {
          await sleep(pauseMs);
          if (running === 0) break;
          await disrupt(kind);
        }
      } finally {
        chaosOver = true;
      }
    })();

    await Promise.all([conversationsDone, chaosDone]);
    for (const d of disruptions) d.recoveryMs = progressAfter(d.at);

    // --- the verdict ---------------------------------------------------------------------------
    // Stragglers' last events (a turn settled through the API poll) get a moment to arrive.
    await sleep(1_000);
    const turns: TurnOutcome[] = [];
    const sse: ChaosReport['sse'] = {
      missing: [],
      mismatched: [],
      unfinished: [],
      duplicateEvents: 0,
      lostWithRedis: [],
    };
    const redisLosses = disruptions.filter((d) => d.kind === 'redis').map((d) => d.at);
    /** Turns with anything wrong: their services' log lines are logged, to tell what happened. */
    const suspects = new Set<string>();
    for (let c = 0; c < conversationIds.length; c++) {
      const id = conversationIds[c];
      const { body: conversation } = await api.get(`/v1/conversations/${id}`);
      const { body: messages } = await api.get<Message[]>(`/v1/conversations/${id}/messages`);
      const finished = new Map<string, Block>();
      const turnEnds = new Map<string, string>();
      for (const e of followed[c].events) {
        if (e.data.type === 'block_finished') finished.set(e.data.block.id, e.data.block);
        if (e.data.type === 'turn_finished') turnEnds.set(e.data.turnId, e.data.status);
      }
      sse.duplicateEvents += followed[c].duplicateEvents;
      const storedIds = new Set<string>();
      for (const turn of conversation.turns as {
        id: string;
        n: number;
        status: TurnStatus;
        error: string | null;
      }[]) {
        const own = messages.filter((m) => m.turnId === turn.id);
        // Redis without persistence loses the events it has taken but not yet handed to a reader
        // when it dies: a turn publishing around that moment may miss some, and only those.
        const publishedAt = followed[c].events
          .filter((e) => e.data.turnId === turn.id)
          .map((e) => Number(e.id.split('-')[0]));
        const lostWithRedis = redisLosses.some((at) =>
          publishedAt.some((t) => t >= at - 1_500 && t <= at + 3_000),
        );
        const blocks = own.flatMap((m) => m.blocks);
        const settled = ['completed', 'failed', 'cut_off'].includes(turn.status);
        const violations = checkTurn({
          turn: { id: TurnId(turn.id), n: turn.n, kind: 'turn', status: turn.status },
          messages: own,
        });
        const uses = new Map<string, string>();
        const counts = new Map<string, number>();
        for (const block of blocks) {
          const key = keyOf(block, uses);
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        const duplicated = [...counts].filter(([, k]) => k > 1).map(([key]) => key);
        const seqs = blocks.map((b) => b.seq);
        if (new Set(seqs).size !== seqs.length) duplicated.push(`seq repeated in ${turn.id}`);
        const lost =
          turn.status === 'completed' ? expectedKeys(c, turn.n, words).filter((key) => !counts.has(key)) : [];
        turns.push({
          conversation: c,
          n: turn.n,
          turnId: turn.id,
          status: settled ? turn.status : 'stuck',
          error: turn.error,
          violations,
          duplicated,
          lost,
        });
        for (const block of blocks) {
          storedIds.add(block.id);
          const received = finished.get(block.id);
          const what = `c${c} t${turn.n} ${keyOf(block, uses).slice(0, 60)} (${block.id})`;
          if (!received) (lostWithRedis ? sse.lostWithRedis : sse.missing).push(what);
          else if (canonical(received) !== canonical(block))
            sse.mismatched.push(`${what}: streamed ${canonical(received)}, stored ${canonical(block)}`);
          if ((!received && !lostWithRedis) || (received && canonical(received) !== canonical(block)))
            suspects.add(turn.id);
        }
        if (settled && turnEnds.get(turn.id) !== turn.status) {
          const what = `c${c} t${turn.n} ${turn.status}, stream: ${turnEnds.get(turn.id) ?? 'none'}`;
          if (lostWithRedis && !turnEnds.has(turn.id)) sse.lostWithRedis.push(`end of ${what}`);
          else {
            sse.unfinished.push(what);
            suspects.add(turn.id);
          }
        }
        if (!settled || violations.length || duplicated.length || lost.length) suspects.add(turn.id);
      }
      for (const blockId of finished.keys())
        if (!storedIds.has(blockId)) sse.mismatched.push(`c${c} streamed but not stored: ${blockId}`);
    }
    for (const app of PORTAL_APPS) {
      const lines = e2e.portal.logs[app].join('').split('\n');
      const telling = lines.filter(
        (l) => !l.includes('"msg":"request"') && [...suspects].some((id) => l.includes(id)),
      );
      for (const line of telling.slice(0, 40)) log(`[${app}] ${line.slice(0, 400)}`);
    }
    const resyncedEvents = [
      ...e2e.portal.logs['turn-orchestrator']
        .join('')
        .matchAll(/published (\d+) event\(s\) its stream lacked/g),
    ].reduce((sum, m) => sum + Number(m[1]), 0);
    const recoveries = disruptions.map((d) => d.recoveryMs).filter((ms): ms is number => ms !== null);
    return {
      turnsRun: turns.length,
      completed: turns.filter((t) => t.status === 'completed').length,
      failed: turns.filter((t) => t.status === 'failed').length,
      stuck: turns.filter((t) => t.status === 'stuck').length,
      duplicatedBlocks: turns.reduce((sum, t) => sum + t.duplicated.length, 0),
      lostBlocks: turns.reduce((sum, t) => sum + t.lost.length, 0),
      invariantViolations: turns.reduce((sum, t) => sum + t.violations.length, 0),
      sse,
      disruptions,
      badAnswers,
      longestRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
      resyncedEvents,
      turns,
      durationMs: Date.now() - started,
    };
  } finally {
    for (const f of followed) f.close();
    for (const step of cleanup) await step().catch((err: Error) => log(`cleanup: ${err.message}`));
  }
}

/** The figures as a table, for the console. */
export function formatChaosReport(report: ChaosReport): string {
  const rows: [string, string | number][] = [
    ['turns run', report.turnsRun],
    ['completed', report.completed],
    ['failed', report.failed],
    ['stuck', report.stuck],
    ['duplicated blocks', report.duplicatedBlocks],
    ['lost blocks', report.lostBlocks],
    ['invariant violations', report.invariantViolations],
    ['SSE: stored blocks not streamed', report.sse.missing.length],
    ['SSE: streamed blocks differing', report.sse.mismatched.length],
    ['SSE: turns without their end', report.sse.unfinished.length],
    ['SSE: events lost with Redis data', report.sse.lostWithRedis.length],
    ['answers other than 202 / 503', report.badAnswers.length],
    ['orchestrator SIGKILLs', report.disruptions.filter((d) => d.kind === 'kill').length],
    ['Redis restarts (data lost)', report.disruptions.filter((d) => d.kind === 'redis').length],
    ['Postgres restarts', report.disruptions.filter((d) => d.kind === 'postgres').length],
    ['events published late (resync)', report.resyncedEvents],
    ['longest recovery time', report.longestRecoveryMs === null ? 'n/a' : `${report.longestRecoveryMs} ms`],
    ['duration', `${(report.durationMs / 1000).toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}
