import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { deflateRepeated } from './bytes.util';
import { hostileCorpus } from './corpus';
import type { HostileCategory } from './hostile.types';
import { requestFuzzCases, type FuzzTargets } from './request-fuzz';

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('the hostile corpus', () => {
  const corpus = hostileCorpus({ markerPath: '/tmp/marker' });

  it('holds more than 100 generated files of every category, each named once, each with what must happen', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(100);
    const categories: HostileCategory[] = [
      'control',
      'pdf-truncated',
      'pdf-malformed',
      'pdf-encrypted',
      'pdf-bomb',
      'pdf-active',
      'pdf-text',
      'image-bomb',
      'image-malformed',
      'polyglot',
      'wrong-name',
      'binary',
      'text-empty-nul',
      'text-invalid-utf8',
      'text-huge',
      'text-unicode',
    ];
    expect(new Set(corpus.map((f) => f.category))).toEqual(new Set(categories));
    expect(new Set(corpus.map((f) => f.name)).size).toBe(corpus.length);
    for (const f of corpus) {
      expect([f.name, ['rejected', 'failed', 'finished', 'settled'].includes(f.expect)]).toEqual([
        f.name,
        true,
      ]);
      if (f.expect === 'rejected')
        expect([f.name, f.code]).toEqual([f.name, expect.stringMatching(/^(unsupported_type|too_large)$/)]);
    }
  });

  it('is the same bytes for the same seed, and other bytes for another seed', () => {
    const again = hostileCorpus({ markerPath: '/tmp/marker' });
    expect(again.map((f) => digest(f.bytes))).toEqual(corpus.map((f) => digest(f.bytes)));
    const other = hostileCorpus({ markerPath: '/tmp/marker', seed: 7 });
    const changed = other.filter((f, i) => digest(f.bytes) !== digest(corpus[i].bytes));
    expect(changed.length).toBeGreaterThan(5);
  });
});

describe('deflateRepeated', () => {
  it('inflates to the chunk repeated, with a valid Adler-32', () => {
    const chunk = Buffer.from('(bomb) Tj\n'.repeat(300));
    expect(inflateSync(deflateRepeated(chunk, 9)).equals(Buffer.concat(Array(9).fill(chunk)))).toBe(true);
    expect(deflateRepeated(Buffer.alloc(1024 * 1024), 2048).length).toBeLessThan(3 * 1024 * 1024);
  });
});

describe('requestFuzzCases', () => {
  const ids = (n: number) => `0000000${n}-0000-4000-8000-000000000000`;
  const targets: FuzzTargets = {
    conversationId: ids(1),
    turnId: ids(2),
    blockId: ids(3),
    agentId: 'helper',
    skillId: ids(4),
    attachmentId: ids(5),
    otherOrg: {
      conversationId: ids(6),
      turnId: ids(7),
      agentId: 'rival',
      skillId: ids(8),
      attachmentId: ids(9),
    },
  };

  it('is a fixed, bounded list for the same targets and seed', () => {
    const cases = requestFuzzCases(targets, { seed: 1 });
    expect(cases.length).toBeGreaterThan(1000);
    expect(cases.length).toBeLessThan(5000);
    expect(JSON.stringify(requestFuzzCases(targets, { seed: 1 }))).toBe(JSON.stringify(cases));
    expect(JSON.stringify(requestFuzzCases(targets, { seed: 2 }))).not.toBe(JSON.stringify(cases));
  });
});
