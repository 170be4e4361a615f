import { markFailed, readInSpan, SPAN, startSpan } from '../tracing/spans.util';
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
 * (`portal_model_tokens_total`), and tracing it as a `model.call` span with the model, the kind,
 * the tokens and the time to the first token. Wrap one attempt:
 * `observeModelCall(metrics, labels, streamChat(…))`.
 */
export async function* observeModelCall<E extends StreamEvent>(
  metrics: PortalMetrics,
  labels: { model: string; kind: ModelCallKind },
  stream: AsyncIterable<E>,
): AsyncGenerator<E, void, undefined> {
  const stop = metrics.modelCallDuration.startTimer(labels);
  const span = startSpan(SPAN.modelCall, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': labels.model,
    'portal.model.kind': labels.kind,
  });
  const started = performance.now();
  let firstToken = true;
  let outcome = 'error';
  try {
    for await (const event of readInSpan(span, stream)) {
      if (firstToken && event.type !== 'done') {
        firstToken = false;
        span.setAttribute('portal.model.time_to_first_token_ms', Math.round(performance.now() - started));
      }
      if (event.type === 'done') {
        outcome = 'ok';
        const usage = event.result?.usage;
        if (usage) {
          metrics.modelTokens.inc({ ...labels, direction: 'input' }, usage.inputTokens);
          metrics.modelTokens.inc({ ...labels, direction: 'output' }, usage.outputTokens);
          metrics.modelTokens.inc({ ...labels, direction: 'cached' }, usage.cachedTokens);
          span.setAttributes({
            'gen_ai.usage.input_tokens': usage.inputTokens,
            'gen_ai.usage.output_tokens': usage.outputTokens,
            'portal.model.cached_tokens': usage.cachedTokens,
          });
        }
      }
      yield event;
    }
  } catch (err) {
    markFailed(span, err);
    throw err;
  } finally {
    stop({ outcome });
    span.end();
  }
}
