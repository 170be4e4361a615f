import fc from 'fast-check';
import { compareStreamIds } from './stream-id.util';

describe('compareStreamIds', () => {
  it('orders by milliseconds, then by sequence, as numbers', () => {
    expect(compareStreamIds('1-0', '2-0')).toBeLessThan(0);
    expect(compareStreamIds('10-0', '9-5')).toBeGreaterThan(0);
    expect(compareStreamIds('5-10', '5-9')).toBeGreaterThan(0);
    expect(compareStreamIds('007-01', '7-1')).toBe(0);
    expect(compareStreamIds('0-0', '0-0')).toBe(0);
    expect(compareStreamIds('18446744073709551615-0', '18446744073709551614-99')).toBeGreaterThan(0);
  });

  it('agrees with BigInt order on any ids', () => {
    const id = fc.tuple(
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    );
    fc.assert(
      fc.property(id, id, ([am, as], [bm, bs]) => {
        const expected = am === bm ? Number(as > bs) - Number(as < bs) : Number(am > bm) - Number(am < bm);
        expect(Math.sign(compareStreamIds(`${am}-${as}`, `${bm}-${bs}`))).toBe(expected);
      }),
    );
  });
});
