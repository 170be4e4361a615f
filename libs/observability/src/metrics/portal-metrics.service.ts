import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The metrics every service reports; dashboards and alerts in k8s/ are checked against these names. */
export const METRIC = {
  turns: 'portal_turns_total',
  turnDuration: 'portal_turn_duration_seconds',
  modelCallDuration: 'portal_model_call_duration_seconds',
  modelTokens: 'portal_model_tokens_total',
  queueJobs: 'portal_queue_jobs',
  jobDuration: 'portal_job_duration_seconds',
  jobWait: 'portal_job_wait_seconds',
  jobsStalled: 'portal_jobs_stalled_total',
  compactions: 'portal_compactions_total',
  ingestDuration: 'portal_ingest_duration_seconds',
  ingestFailures: 'portal_ingest_failures_total',
  toolCalls: 'portal_tool_calls_total',
} as const;

/** The gateway's own metrics (its MetricsService), beside METRIC, which every service reports. */
export const GATEWAY_METRIC = {
  httpRequests: 'portal_gateway_http_requests_total',
  sseConnections: 'portal_gateway_sse_connections',
  sseDropped: 'portal_gateway_sse_dropped_total',
  turnsOpened: 'portal_gateway_turns_opened_total',
} as const;

/** Job states reported by `portal_queue_jobs`. */
export const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'failed', 'completed'] as const;

/** What `portal_queue_jobs` reads at scrape time: a BullMQ Queue fits. */
export interface CountedQueue {
  readonly name: string;
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
}

/** Model calls last seconds to minutes; jobs and turns up to several minutes. */
const CALL_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];
const WAIT_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300];

/**
 * How often the event-loop delay is sampled: prom-client's default, 10 ms, keeps an idle service
 * waking 100 times a second for it; at 50 ms a scrape still reads hundreds of samples
 * (docs/benchmarks.md).
 */
const EVENT_LOOP_SAMPLE_MS = 50;

/** Node's process metrics (CPU, memory, event loop) as `<prefix>process_…`, `<prefix>nodejs_…`. */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({ register: registry, prefix, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
}

/**
 * The portal's Prometheus metrics on a registry of their own (several apps may share a process in
 * tests). Every app has one (QueueModule provides it); each records the ones it does.
 */
export class PortalMetrics {
  readonly registry = new Registry();
  private readonly watched = new Set<CountedQueue>();
  private readonly registers = [this.registry];

  /** Turns settled, by final status (completed, failed, cut_off). */
  readonly turns = new Counter({
    name: METRIC.turns,
    help: 'Turns settled, by final status',
    labelNames: ['status'] as const,
    registers: this.registers,
  });

  /** From a run's claim of the turn to its settling (a turn resumed after a pause: its last run). */
  readonly turnDuration = new Histogram({
    name: METRIC.turnDuration,
    help: 'Seconds from a run claiming a turn to the turn settling',
    labelNames: ['status'] as const,
    buckets: JOB_BUCKETS,
    registers: this.registers,
  });

  readonly modelCallDuration = new Histogram({
    name: METRIC.modelCallDuration,
    help: 'Seconds of one model call (one attempt), by catalogue model and kind (turn, summary, compaction)',
    labelNames: ['model', 'kind', 'outcome'] as const,
    buckets: CALL_BUCKETS,
    registers: this.registers,
  });

  readonly modelTokens = new Counter({
    name: METRIC.modelTokens,
    help: 'Tokens the provider reported, by model, kind and direction (input, output, cached: part of input)',
    labelNames: ['model', 'kind', 'direction'] as const,
    registers: this.registers,
  });

  readonly queueJobs = new Gauge({
    name: METRIC.queueJobs,
    help: 'Jobs of each queue by state, read from Redis at scrape time',
    labelNames: ['queue', 'state'] as const,
    registers: this.registers,
    collect: () => this.countQueues(),
  });

  readonly jobDuration = new Histogram({
    name: METRIC.jobDuration,
    help: 'Seconds a job handler ran, by queue and outcome (completed, failed, handed_back, delayed)',
    labelNames: ['queue', 'outcome'] as const,
    buckets: JOB_BUCKETS,
    registers: this.registers,
  });

  readonly jobWait = new Histogram({
    name: METRIC.jobWait,
    help: 'Seconds a job waited in its queue before its first attempt started (after any delay)',
    labelNames: ['queue'] as const,
    buckets: WAIT_BUCKETS,
    registers: this.registers,
  });

  /** A worker died or froze holding the job's lock; BullMQ gave the job to another worker. */
  readonly jobsStalled = new Counter({
    name: METRIC.jobsStalled,
    help: 'Jobs whose lock expired while active (their worker died or froze), moved back to wait',
    labelNames: ['queue'] as const,
    registers: this.registers,
  });

  readonly compactions = new Counter({
    name: METRIC.compactions,
    help: 'Compaction jobs run, by trigger (AUTO, MANUAL) and outcome (completed, failed, retried, handed_back)',
    labelNames: ['trigger', 'outcome'] as const,
    registers: this.registers,
  });

  readonly ingestDuration = new Histogram({
    name: METRIC.ingestDuration,
    help: 'Seconds an attachment took to read, by kind (picture, document)',
    labelNames: ['kind'] as const,
    buckets: JOB_BUCKETS,
    registers: this.registers,
  });

  readonly ingestFailures = new Counter({
    name: METRIC.ingestFailures,
    help: 'Attachments that failed to be read (unreadable, or out of attempts), by kind',
    labelNames: ['kind'] as const,
    registers: this.registers,
  });

  /** Tool calls that ended with a result; labels name where the tool lives, never what it was asked. */
  readonly toolCalls = new Counter({
    name: METRIC.toolCalls,
    help: 'Tool calls that returned a result, by source (mcp), MCP server and outcome (ok, error)',
    labelNames: ['source', 'server', 'outcome'] as const,
    registers: this.registers,
  });

  /** `portal_queue_jobs` reports these queues from now on. */
  watchQueues(queues: readonly CountedQueue[]): void {
    for (const queue of queues) this.watched.add(queue);
  }

  /** The text Prometheus scrapes. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private async countQueues(): Promise<void> {
    const counted = await Promise.all(
      [...this.watched].map(async (queue) => ({
        queue: queue.name,
        counts: await queue.getJobCounts(...QUEUE_STATES).catch(() => null),
      })),
    );
    this.queueJobs.reset();
    for (const { queue, counts } of counted) {
      if (!counts) continue; // Redis unreachable: no sample rather than a wrong zero
      for (const state of QUEUE_STATES) this.queueJobs.set({ queue, state }, counts[state] ?? 0);
    }
  }
}
