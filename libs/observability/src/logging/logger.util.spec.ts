import { ConversationId, OrgId, TurnId } from '@portal/domain';
import { Writable } from 'node:stream';
import { addLogContext, createLogger, logContext, runWithLogContext } from './logger.util';

/** A pino logger whose lines land in `lines`, parsed. */
function captured() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  return { lines, raw, log: createLogger({ name: 'test-app', level: 'debug', destination }) };
}

const KEY = 'pk_test_never_logged';
const TEXT = 'The quarterly figures are confidential.';

describe('createLogger', () => {
  it('writes one JSON object a line: time, level as a word, the app, the message', () => {
    const { lines, log } = captured();
    log.info({ durationMs: 3 }, 'done');
    expect(lines[0]).toMatchObject({ level: 'info', name: 'test-app', msg: 'done', durationMs: 3 });
    expect(new Date(lines[0].time as string).toISOString()).toBe(lines[0].time);
  });

  it('redacts keys, authorization headers and texts, at the top and one level down', () => {
    const { lines, raw, log } = captured();
    log.info({
      apiKey: KEY,
      authorization: `Bearer ${KEY}`,
      text: TEXT,
      content: TEXT,
      req: { headers: { authorization: `Bearer ${KEY}`, cookie: `s=${KEY}` } },
      user: { apiKey: KEY },
      block: { text: TEXT, content: TEXT },
      attachment: { pages: [TEXT] },
      turnId: 't-1',
    });
    expect(raw.join('\n')).not.toContain(KEY);
    expect(raw.join('\n')).not.toContain(TEXT);
    expect(lines[0]).toMatchObject({ apiKey: '[redacted]', block: { text: '[redacted]' }, turnId: 't-1' });
  });

  it("adds the context's ids to every line inside runWithLogContext, across awaits", async () => {
    const { lines, log } = captured();
    const context = await runWithLogContext({ orgId: OrgId('acme'), turnId: TurnId('t-1') }, async (ids) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      addLogContext({ conversationId: ConversationId('c-1'), userId: undefined });
      log.info('inside');
      return ids;
    });
    log.info('outside');
    expect(lines[0]).toMatchObject({ orgId: 'acme', turnId: 't-1', conversationId: 'c-1' });
    expect(lines[0]).not.toHaveProperty('userId');
    expect(lines[1]).not.toHaveProperty('orgId');
    // What was added inside is there for a line written after the context is left.
    expect(context).toEqual({ orgId: 'acme', turnId: 't-1', conversationId: 'c-1' });
  });

  it('logContext binds ids to a child logger', () => {
    const { lines, log } = captured();
    logContext(log, { orgId: OrgId('acme'), conversationId: ConversationId('c-1'), turnId: undefined }).warn(
      'hi',
    );
    expect(lines[0]).toMatchObject({ level: 'warn', orgId: 'acme', conversationId: 'c-1', msg: 'hi' });
    expect(lines[0]).not.toHaveProperty('turnId');
  });
});
