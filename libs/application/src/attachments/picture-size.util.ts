import { findModel, type ModelEntry, type ModelVision } from '@portal/model';

/** Used when no model of the catalogue can see: OpenAI's high-detail limits. */
export const FALLBACK_VISION: ModelVision = { maxLongSide: 2048, maxShortSide: 768 };

/**
 * The limits a picture is reduced to: those of the model that will read it (the agent's model of
 * the conversation it was uploaded to); without one, or when that model cannot see, the largest
 * limits in the catalogue, side by side, so any model can still get a copy at most that large.
 */
export function visionLimitsFor(catalogue: readonly ModelEntry[], modelId: string | null): ModelVision {
  const own = modelId === null ? null : findModel(catalogue, modelId)?.vision;
  if (own) return own;
  const all = catalogue.flatMap((m) => (m.vision ? [m.vision] : []));
  if (!all.length) return FALLBACK_VISION;
  return {
    maxLongSide: Math.max(...all.map((v) => v.maxLongSide)),
    maxShortSide: Math.max(...all.map((v) => v.maxShortSide)),
  };
}
