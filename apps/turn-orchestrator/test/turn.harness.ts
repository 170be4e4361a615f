import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext, INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { cancelChannel, QueueName, type PortalEvent, readRedisUrl } from '@portal/contracts';
import {
  AgentRepository,
  BlockRepository,
  ConversationRepository,
  OrgRepository,
  SkillRepository,
  TurnRepository,
  UsageRepository,
  UserRepository,
  type AgentTool,
  type SkillInput,
} from '@portal/dal';
import {
  AgentId,
  type Block,
  ConversationId,
  type Effort,
  type Message,
  OrgId,
  TurnId,
  UserId,
} from '@portal/domain';
import { createQueueMicroservice } from '@portal/queue';
import { ConversationEvents } from '@portal/redis';
import {
  createTestDatabase,
  deleteRedisPrefix,
  startFakeOpenAI,
  type FakeOpenAI,
  type TestDatabase,
} from '@portal/testing';
import IORedis from 'ioredis';
import type { Logger } from 'pino';
import { AppModule } from '../src/app.module';
import { readConfig, type TurnOrchestratorConfig } from '../src/config';
import { RetryPolicy } from '../src/turn/retry-policy.service';
import { TurnRunner } from '../src/turn/turn-runner.service';

export const ORG = OrgId('acme');
const REDIS_URL = readRedisUrl(process.env);

/**
 * The turn-orchestrator as it boots (AppModule), on a fresh database, real Redis under a unique
 * prefix and the fake OpenAI server. Tests write what the gateway writes (turn protocol 1, 3, 5,
 * 6) with the repositories and run the `run-turn` handler's runner directly, so they wait for the
 * turn to settle, never for time to pass. Retry waits are recorded and skipped.
 */
export interface Harness {
  db: TestDatabase;
  fake: FakeOpenAI;
  app: INestApplicationContext;
  config: TurnOrchestratorConfig;
  redis: IORedis;
  /** Every retry wait asked for, in ms. */
  waits: number[];
  /**
   * A turn-orchestrator consuming the `turns` queue, as it boots, beside `app` (closed with it),
   * logging to `logger` (a `createLogger` logger) or not at all.
   */
  startWorker(logger?: Logger): Promise<INestMicroservice>;
  /** `busy`: another worker holds the turn's live lease. */
  run(turnId: string, shutdown?: AbortSignal): Promise<'busy' | undefined>;
  openTurn(opts?: OpenTurn): Promise<{ turnId: string; conversationId: string }>;
  /** The fake's requests since `mark` that offered tools (the turn's calls, not the title call). */
  turnCalls(mark?: number): FakeOpenAI['requests'];
  turn(turnId: string): ReturnType<TurnRepository['get']>;
  messages(turnId: string): Promise<Message[]>;
  blocks(turnId: string): Promise<Block[]>;
  usage(turnId: string): ReturnType<UsageRepository['listForTurn']>;
  events(conversationId: string): Promise<PortalEvent[]>;
  waitForEvent(conversationId: string, test: (e: PortalEvent) => boolean): Promise<void>;
  steer(turnId: string, text: string): Promise<void>;
  answer(
    turnId: string,
    blockId: string,
    answer: { answer: string } | { approved: boolean; note?: string },
  ): Promise<void>;
  cancel(turnId: string): Promise<void>;
  close(): Promise<void>;
}

export interface OpenTurn {
  agentId?: string;
  text?: string;
  effort?: Effort;
  selectedSkillIds?: string[];
  catalogueSkillIds?: string[];
  conversationId?: string;
}

export const skill = (slug: string, over: Partial<SkillInput> = {}): SkillInput => ({
  slug,
  name: slug,
  description: `The ${slug} skill.`,
  instructions: `Instructions of ${slug}.`,
  visibility: 'org',
  ownerId: 'alice',
  status: 'active',
  published: true,
  ...over,
});

/** A catalogue entry besides `gpt-test` and `reasoner`, served by the same fake. */
export interface ExtraModel {
  id: string;
  contextWindow: number;
  compactAt?: number;
  price?: { inputPerMTok: number; outputPerMTok: number; cachedInputPerMTok: number };
}

export async function startHarness(
  opts: { env?: Record<string, string>; tools?: AgentTool[]; models?: ExtraModel[] } = {},
): Promise<Harness> {
  const db = await createTestDatabase();
  const fake = await startFakeOpenAI({
    defaultResponder: (req) => (Array.isArray(req.body?.tools) ? 'Fake answer.' : 'Test title'),
  });
  const prefix = `t-orch-${randomUUID().slice(0, 8)}`;
  const modelsFile = join(tmpdir(), `${prefix}-models.json`);
  const price = { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 };
  writeFileSync(
    modelsFile,
    JSON.stringify({
      models: [
        { id: 'gpt-test', baseURL: fake.baseURL, contextWindow: 128000, reasoning: false, price },
        { id: 'reasoner', baseURL: fake.baseURL, contextWindow: 128000, reasoning: true, price },
        ...(opts.models ?? []).map((m) => ({ baseURL: fake.baseURL, reasoning: false, price, ...m })),
      ],
    }),
  );
  const config = readConfig({
    DATABASE_URL: db.url,
    REDIS_URL,
    PORTAL_PREFIX: prefix,
    PORTAL_MODELS_FILE: modelsFile,
    MODEL_RETRIES: '2',
    MODEL_TIMEOUT_MS: '5000',
    MODEL_IDLE_TIMEOUT_MS: '5000',
    RECONCILE_INTERVAL_MS: '0',
    ...opts.env,
  });

  const ds = db.dataSource;
  await new OrgRepository(ds).upsert(ORG);
  await new UserRepository(ds).upsert(ORG, UserId('alice'), 'author');
  const agents = new AgentRepository(ds);
  for (const [id, model] of [
    ['researcher', 'gpt-test'],
    ['thinker', 'reasoner'],
  ]) {
    await agents.upsert(ORG, {
      id: AgentId(id),
      name: id,
      instructions: `You are the ${id}.`,
      model,
      effort: 'medium',
      tools: opts.tools ?? [],
      reviewer: null,
      compactionGuidance: null,
    });
  }

  const app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { logger: false });
  const waits: number[] = [];
  jest.spyOn(app.get(RetryPolicy), 'wait').mockImplementation(async (ms: number) => {
    waits.push(ms);
  });
  const runner = app.get(TurnRunner);
  const events = app.get(ConversationEvents);
  const redis = new IORedis(REDIS_URL);
  const turns = new TurnRepository(ds);
  const blocks = new BlockRepository(ds);

  const workers: INestMicroservice[] = [];
  const readEvents = async (conversationId: string) =>
    (await events.readAfter(ConversationId(conversationId), '0-0', 10_000)).map((e) => e.event);

  return {
    db,
    fake,
    app,
    config,
    redis,
    waits,
    async startWorker(logger) {
      const worker = await createQueueMicroservice(AppModule.forRoot(config), {
        queues: [QueueName.Turns],
        logger: logger ?? false,
      });
      workers.push(worker);
      await worker.listen();
      return worker;
    },
    run: (turnId, shutdown = new AbortController().signal) =>
      runner.run({ orgId: ORG, turnId: TurnId(turnId) }, shutdown),
    async openTurn(o = {}) {
      const agentId = o.agentId ?? 'researcher';
      const conversationId =
        o.conversationId ??
        (await new ConversationRepository(ds).create(ORG, UserId('alice'), AgentId(agentId)))!.id;
      const agent = await agents.get(ORG, AgentId(agentId));
      const created = await turns.createWithUserMessage(ORG, {
        conversationId: ConversationId(conversationId),
        effort: o.effort ?? agent!.effort,
        model: agent!.model,
        text: o.text ?? 'Hello?',
        selectedSkillIds: o.selectedSkillIds ?? [],
        catalogueSkillIds: o.catalogueSkillIds ?? [],
      });
      return { turnId: created!.turn.id, conversationId };
    },
    turnCalls: (mark = 0) => fake.requests.slice(mark).filter((r) => Array.isArray(r.body?.tools)),
    turn: (turnId) => turns.get(ORG, TurnId(turnId)),
    messages: (turnId) => blocks.listTurnMessages(ORG, TurnId(turnId)),
    blocks: async (turnId) => (await blocks.listTurnMessages(ORG, TurnId(turnId))).flatMap((m) => m.blocks),
    usage: (turnId) => new UsageRepository(ds).listForTurn(ORG, TurnId(turnId)),
    events: readEvents,
    async waitForEvent(conversationId, test) {
      for (let i = 0; i < 500; i++) {
        if ((await readEvents(conversationId)).some(test)) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('the event never came');
    },
    async steer(turnId, text) {
      await blocks.append(ORG, TurnId(turnId), [{ kind: 'text', text, narration: false, steering: true }], {
        into: 'user',
      });
    },
    async answer(turnId, blockId, answer) {
      await ds.transaction(async (em) => {
        const tx = new BlockRepository(em);
        const found = await tx.getBlock(ORG, blockId);
        await tx.updateBlock(ORG, { ...found!.block, ...answer } as Block);
        await new TurnRepository(em).updateStatus(ORG, TurnId(turnId), 'running', { from: ['paused'] });
      });
    },
    async cancel(turnId) {
      await turns.requestCancel(ORG, TurnId(turnId));
      await redis.publish(cancelChannel(prefix), turnId);
    },
    async close() {
      jest.restoreAllMocks();
      for (const worker of workers) await worker.close();
      await app.close();
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
      await fake.close();
      await db.drop();
      rmSync(modelsFile, { force: true });
    },
  };
}

export async function addSkill(h: Harness, input: SkillInput): Promise<string> {
  return (await new SkillRepository(h.db.dataSource).upsert(ORG, input)).id;
}

/** The text of a chat request's messages, for asserting on what the model read. */
export function transcriptOf(request: FakeOpenAI['requests'][number]): string {
  return JSON.stringify(request.body.messages);
}
