import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { formatChaosReport, runChaos } from '@portal/testing';

/**
 * `npm run test:chaos`, the full form (issue #9): 10 conversations of 5 turns while the
 * turn-orchestrator is SIGKILLed every few seconds (8 times), Redis restarted once (losing its data)
 * and Postgres once; the conversations go on past 5 turns until the last disruption is over. Prints the figures; exits 1 when a
 * turn is stuck, a block lost or doubled, an invariant broken or a stream differs from the store.
 */
async function main(): Promise<void> {
  // `npm run test:chaos -- --cluster`: the same run on a 3-master Redis Cluster.
  const redisCluster = process.argv.includes('--cluster');
  const logsDir = mkdtempSync(path.join(tmpdir(), 'portal-chaos-logs-'));
  const report = await runChaos({
    redisCluster,
    conversations: 10,
    turnsPerConversation: 5,
    kills: 8,
    pauseMs: 2_000,
    log: (line) => console.log(line),
    logsDir,
  }).catch((err: unknown) => {
    console.error(`the services' and Postgres's output: ${logsDir}`);
    throw err;
  });
  console.log(`\nchaos (full form${redisCluster ? ', Redis Cluster' : ''})\n${formatChaosReport(report)}`);
  // A turn that failed with its reason is allowed (and listed); anything below is not.
  for (const t of report.turns.filter((turn) => turn.status === 'failed' && turn.error))
    console.log(`failed: c${t.conversation} t${t.n} ${t.turnId}: ${t.error}`);
  const problems = [
    ...report.turns
      .filter((t) => !['completed', 'failed'].includes(t.status) || (t.status === 'failed' && !t.error))
      .map((t) => `${t.status}: c${t.conversation} t${t.n} ${t.turnId} ${t.error ?? ''}`),
    ...report.turns.flatMap((t) => t.duplicated.map((d) => `duplicated: c${t.conversation} t${t.n} ${d}`)),
    ...report.turns.flatMap((t) => t.lost.map((d) => `lost: c${t.conversation} t${t.n} ${d}`)),
    ...report.turns.flatMap((t) =>
      t.violations.map((v) => `invariant: c${t.conversation} t${t.n} ${JSON.stringify(v)}`),
    ),
    ...report.badAnswers.map((a) => `answered: ${a}`),
    ...report.sse.missing.map((m) => `SSE missing: ${m}`),
    ...report.sse.mismatched.map((m) => `SSE differs: ${m}`),
    ...report.sse.unfinished.map((m) => `SSE no end: ${m}`),
  ];
  for (const m of report.sse.lostWithRedis) console.log(`SSE lost with Redis's data (allowed): ${m}`);
  if (report.sse.duplicateEvents) problems.push(`SSE: ${report.sse.duplicateEvents} events delivered twice`);
  if (report.turnsRun < 50) problems.push(`only ${report.turnsRun} turns ran`);
  if (problems.length)
    console.log(`\n${problems.join('\n')}\n\nthe services' and Postgres's output: ${logsDir}`);
  else rmSync(logsDir, { recursive: true, force: true });
  process.exitCode = problems.length > 0 ? 1 : 0;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
