import { firstValue } from './bytea-copy.util';

const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

describe('firstValue (binary COPY)', () => {
  it('reads the first column of the first row, across chunks', () => {
    const value = Buffer.from([0, 1, 2, 255]);
    const row = Buffer.concat([int16(1), int32(value.length), value]);
    expect(firstValue([header, row, int16(-1)])).toEqual(value);
    expect(firstValue([Buffer.concat([header, row, int16(-1)])])).toEqual(value);
  });

  it('answers null without a row or for a null value', () => {
    expect(firstValue([header, int16(-1)])).toBeNull();
    expect(firstValue([header, Buffer.concat([int16(1), int32(-1)]), int16(-1)])).toBeNull();
  });

  it('refuses a stream that is not binary COPY or is cut short', () => {
    expect(() => firstValue([Buffer.from('hello world, this is text')])).toThrow('no valid header');
    expect(() => firstValue([header, int16(1), int32(10), Buffer.from([1, 2])])).toThrow('truncated');
  });
});
