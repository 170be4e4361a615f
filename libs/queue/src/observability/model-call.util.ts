import type { PortalMetrics } from './portal-metrics.service';

/** What a model stream's last event carries (structurally @portal/model's `done`). */
interface Usage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}
type StreamEvent = { type: string; result?: { usage?: Usage | null } };

/** The calls the portal makes, as the usage rows name them. */
export type ModelCallKind = 'turn' | 'summary' | 'compaction' | 'review';

/**
 * Passes a model stream through unchanged, recording the call's duration
 * (`portal_model_call_duration_seconds`) and the tokens its `done` event reports
 * (`portal_model_tokens_total`). Wrap one attempt: `observeModelCall(metrics, labels, streamChat(…))`.
 */
export async function* observeModelCall<E extends StreamEvent>(
  metrics: PortalMetrics,
  labels: { model: string; kind: ModelCallKind },
  stream: AsyncIterable<E>,
): AsyncGenerator<E, void, undefined> {
  const stop = metrics.modelCallDuration.startTimer(labels);
  let outcome = 'error';
  try {
    for await (const event of stream) {
      if (event.type === 'done') {
        outcome = 'ok';
        const usage = event.result?.usage;
        if (usage) {
          metrics.modelTokens.inc({ ...labels, direction: 'input' }, usage.inputTokens);
          metrics.modelTokens.inc({ ...labels, direction: 'output' }, usage.outputTokens);
          metrics.modelTokens.inc({ ...labels, direction: 'cached' }, usage.cachedTokens);
        }
      }
      yield event;
    }
  } finally {
    stop({ outcome });
  }
}
