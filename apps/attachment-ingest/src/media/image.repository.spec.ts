import { availableParallelism } from 'node:os';
import { readIngestLimits } from '../config';
import { threadsPerPicture } from './image.repository';

describe('threadsPerPicture', () => {
  it('shares the cores among the pictures read at once, one thread at least', () => {
    expect(threadsPerPicture(2, 2)).toBe(1);
    expect(threadsPerPicture(8, 2)).toBe(4);
    expect(threadsPerPicture(7, 2)).toBe(3);
    expect(threadsPerPicture(1, 2)).toBe(1);
    expect(threadsPerPicture(4, 0)).toBe(4);
  });

  it('is the worker’s setting unless VIPS_CONCURRENCY, libvips’ own, is set', () => {
    // The attachments worker reads 2 pictures at once (WORKER_OPTIONS).
    expect(readIngestLimits({}).pictureThreads).toBe(threadsPerPicture(availableParallelism(), 2));
    expect(readIngestLimits({ VIPS_CONCURRENCY: '3' }).pictureThreads).toBe(0);
  });
});
