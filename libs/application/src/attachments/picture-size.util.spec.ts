import type { ModelEntry } from '@portal/model';
import { fitWithin } from './picture-copies';
import { FALLBACK_VISION, visionLimitsFor } from './picture-size.util';

const model = (id: string, vision: ModelEntry['vision']): ModelEntry => ({
  id,
  model: id,
  baseURL: 'http://127.0.0.1:1/v1',
  contextWindow: 1000,
  vision,
  reasoning: false,
  price: { inputPerMTok: 0, outputPerMTok: 0, cachedInputPerMTok: 0 },
});

describe('fitWithin', () => {
  const limits = { maxLongSide: 2048, maxShortSide: 768 };

  it('fits the long side and the short side, keeping proportions', () => {
    expect(fitWithin(4000, 3000, limits)).toEqual({ width: 1024, height: 768 });
    expect(fitWithin(3000, 4000, limits)).toEqual({ width: 768, height: 1024 });
    expect(fitWithin(8192, 1000, limits)).toEqual({ width: 2048, height: 250 });
  });

  it('never enlarges', () => {
    expect(fitWithin(640, 480, limits)).toEqual({ width: 640, height: 480 });
    expect(fitWithin(2048, 768, limits)).toEqual({ width: 2048, height: 768 });
  });

  it('keeps at least one pixel', () => {
    expect(fitWithin(100_000, 1, limits)).toEqual({ width: 2048, height: 1 });
  });
});

describe('visionLimitsFor', () => {
  const small = model('small', { maxLongSide: 1024, maxShortSide: 512 });
  const wide = model('wide', { maxLongSide: 4096, maxShortSide: 400 });
  const blind = model('blind', null);

  it("uses the model's own limits", () => {
    expect(visionLimitsFor([small, wide], 'small')).toEqual({ maxLongSide: 1024, maxShortSide: 512 });
  });

  it('without a model, or with one that cannot see, takes the largest of each side in the catalogue', () => {
    expect(visionLimitsFor([small, wide, blind], null)).toEqual({ maxLongSide: 4096, maxShortSide: 512 });
    expect(visionLimitsFor([small, wide, blind], 'blind')).toEqual({ maxLongSide: 4096, maxShortSide: 512 });
    expect(visionLimitsFor([small], 'gone')).toEqual({ maxLongSide: 1024, maxShortSide: 512 });
  });

  it('falls back to fixed limits when no model can see', () => {
    expect(visionLimitsFor([blind], null)).toEqual(FALLBACK_VISION);
  });
});
