import { TurnId } from '@portal/domain';
import { QueueName } from '@portal/contracts';
import type { INestMicroservice } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { BullMqClient, JobRecord } from '@portal/queue';
import { createLogger, PortalMetrics } from '@portal/observability';
import { captureLogs } from '@portal/testing';
import { ORG, startHarness, type Harness } from '../test/turn.harness';

/** Words of the person and of the model: they go to Postgres and the event stream, never to logs. */
const QUESTION = 'What did the Lisbon board decide about project KINGFISHER?';
const ANSWER = 'The board approved KINGFISHER with a budget of 12 million.';

let h: Harness;
let worker: INestMicroservice;
const logs = captureLogs();

beforeAll(async () => {
  h = await startHarness();
  worker = await h.startWorker(createLogger({ name: 'turn-orchestrator', destination: logs.destination }));
});
afterAll(async () => {
  await h?.close();
});

/** Waits for a log line. */
async function line(test: (l: Record<string, any>) => boolean): Promise<Record<string, any>> {
  for (let i = 0; i < 400; i++) {
    const found = logs.lines().find(test);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no such log line in:\n${logs.raw.join('\n')}`);
}

describe('a turn run from the queue', () => {
  let turnId: string;
  let conversationId: string;

  beforeAll(async () => {
    ({ turnId, conversationId } = await h.openTurn({ text: QUESTION }));
    h.fake.enqueue({ text: ANSWER, usage: { prompt_tokens: 321, completion_tokens: 12 } });
    const record = new JobRecord(
      { orgId: ORG, turnId: TurnId(turnId) },
      { jobId: `run-turn:${turnId}:open` },
    );
    await lastValueFrom(h.app.get(BullMqClient).emit(QueueName.Turns, record));
    await line((l) => l.msg === 'run-turn completed' && l.turnId === turnId);
  });

  it('logs JSON lines carrying its org, conversation, turn and job', async () => {
    expect(await h.turn(turnId)).toMatchObject({ status: 'completed' });
    const done = await line((l) => l.msg === 'run-turn completed');
    expect(done).toMatchObject({
      level: 'info',
      name: 'turn-orchestrator',
      context: 'Queue',
      orgId: ORG,
      conversationId,
      turnId,
      queue: 'turns',
      jobId: `run-turn:${turnId}:open`,
      attempt: 1,
      durationMs: expect.any(Number),
    });
  });

  it("never logs the person's message or the model's answer", () => {
    const all = logs.raw.join('\n');
    expect(all).not.toContain('KINGFISHER');
    expect(all).not.toContain('Lisbon');
  });

  it('records the turn, its model calls, tokens and the job in the metrics', async () => {
    const text = await worker.get(PortalMetrics).registry.metrics();
    expect(text).toContain('portal_turns_total{status="completed"} 1');
    expect(text).toContain('portal_turn_duration_seconds_count{status="completed"} 1');
    expect(text).toContain(
      'portal_model_call_duration_seconds_count{model="gpt-test",kind="turn",outcome="ok"} 1',
    );
    expect(text).toContain('portal_model_tokens_total{model="gpt-test",kind="turn",direction="input"} 321');
    expect(text).toContain('portal_model_tokens_total{model="gpt-test",kind="turn",direction="output"} 12');
    // The title of the conversation's first turn.
    expect(text).toMatch(
      /portal_model_call_duration_seconds_count\{model="gpt-test",kind="summary",outcome="ok"\} 1/,
    );
    expect(text).toContain('portal_job_duration_seconds_count{queue="turns",outcome="completed"} 1');
    expect(text).toContain('portal_job_wait_seconds_count{queue="turns"} 1');
  });
});
