import { UserId } from '@portal/domain';
import {
  catalogueLine,
  isSelectable,
  isValidSlug,
  parseLeadingSlugs,
  renderCatalogue,
  type SkillForCatalogue,
} from './skills.util';

describe('parseLeadingSlugs', () => {
  it.each<[string, string[], string]>([
    ['/market-research /fact-check compare these', ['market-research', 'fact-check'], 'compare these'],
    ['  /a /b /a  text /c', ['a', 'b'], 'text /c'],
    ['/a\n/b\nmulti\nline', ['a', 'b'], 'multi\nline'],
    ['/a', ['a'], ''],
    ['no slugs /a', [], 'no slugs /a'],
    ['/Fact-check text', [], '/Fact-check text'],
    ['/a /-bad /b', ['a'], '/-bad /b'],
    ['/a, /b', [], '/a, /b'],
    ['/ a', [], '/ a'],
    [`/${'x'.repeat(64)} ok`, ['x'.repeat(64)], 'ok'],
    [`/${'x'.repeat(65)} ok`, [], `/${'x'.repeat(65)} ok`],
    ['/fact-check /compact now', ['fact-check'], '/compact now'],
    ['/compactly speaking', ['compactly'], 'speaking'],
  ])('%j gives slugs %j and text %j', (input, slugs, rest) => {
    expect(parseLeadingSlugs(input)).toEqual({ slugs, rest, isCompact: false, compactInstructions: null });
  });

  it.each<[string, string | null]>([
    ['/compact', null],
    ['  /compact  ', null],
    ['/compact keep every figure', 'keep every figure'],
    ['/compact\nkeep the tables\n', 'keep the tables'],
  ])('%j is /compact with instructions %j', (input, instructions) => {
    expect(parseLeadingSlugs(input)).toEqual({
      slugs: [],
      rest: instructions ?? '',
      isCompact: true,
      compactInstructions: instructions,
    });
  });

  it('reserves compact', () => {
    expect(isValidSlug('compact')).toBe(false);
    expect(isValidSlug('compact-2')).toBe(true);
  });
});

describe('the catalogue', () => {
  const skill = (id: string, over: Partial<SkillForCatalogue> = {}): SkillForCatalogue => ({
    id,
    slug: id,
    description: `Use ${id}.`,
    visibility: 'org',
    ownerId: 'u_other',
    status: 'active',
    published: true,
    ...over,
  });

  it('lets /slug reach any visible active skill, published or not', () => {
    expect(isSelectable(skill('draft', { published: false }), UserId('u1'))).toBe(true);
    expect(isSelectable(skill('off', { status: 'inactive' }), UserId('u1'))).toBe(false);
    expect(isSelectable(skill('theirs', { visibility: 'private' }), UserId('u1'))).toBe(false);
  });

  it('renders slug — one sentence, on one line each', () => {
    expect(catalogueLine({ slug: 'fact-check', description: 'Checks claims\n  against sources. ' })).toBe(
      'fact-check — Checks claims against sources.',
    );
    expect(
      renderCatalogue([
        { slug: 'a', description: 'One.' },
        { slug: 'b', description: 'Two.' },
      ]),
    ).toBe('a — One.\nb — Two.');
  });
});
