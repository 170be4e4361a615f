import { threadsPerPicture } from './image.repository';

describe('threadsPerPicture', () => {
  it('shares the cores among the pictures read at once, one thread at least', () => {
    expect(threadsPerPicture(2, 2)).toBe(1);
    expect(threadsPerPicture(8, 2)).toBe(4);
    expect(threadsPerPicture(7, 2)).toBe(3);
    expect(threadsPerPicture(1, 2)).toBe(1);
    expect(threadsPerPicture(4, 0)).toBe(4);
  });
});
