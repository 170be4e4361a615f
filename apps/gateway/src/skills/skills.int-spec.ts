import { startGateway, type Harness } from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const slugsOf = (skills: { slug: string }[]) => skills.map((s) => s.slug);

describe('skills', () => {
  it('lists what the caller can see: org skills and their own private ones', async () => {
    const all = ['draft', 'fact-check', 'retired', 'style-guide'];
    expect(slugsOf((await gw.call('GET', '/v1/skills', { as: 'bob' })).body)).toEqual(all);
    expect(slugsOf((await gw.call('GET', '/v1/skills', { as: 'dave' })).body)).toEqual(
      [...all, 'secret'].sort(),
    );
    expect(slugsOf((await gw.call('GET', '/v1/skills', { as: 'mallory' })).body)).toEqual(['globex-only']);
  });

  it("reads one skill; another user's private skill is 404", async () => {
    const secret = (await gw.call('GET', '/v1/skills', { as: 'dave' })).body.find(
      (s: { slug: string }) => s.slug === 'secret',
    );
    const own = await gw.call('GET', `/v1/skills/${secret.id}`, { as: 'dave' });
    expect(own.body).toEqual({
      id: secret.id,
      slug: 'secret',
      name: 'secret',
      description: 'The secret skill.',
      instructions: 'Do secret.',
      visibility: 'private',
      ownerId: 'dave',
      status: 'active',
      published: true,
    });
    const other = await gw.call('GET', `/v1/skills/${secret.id}`, { as: 'alice' });
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('not_found');
    expect((await gw.call('GET', '/v1/skills/not-a-uuid')).status).toBe(404);
  });

  it('lets authors create skills they own, with defaults', async () => {
    const res = await gw.call('POST', '/v1/skills', {
      as: 'alice',
      body: { slug: 'summarise', name: 'Summarise', description: 'Summarise it.', instructions: '# Steps' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      slug: 'summarise',
      visibility: 'org',
      status: 'active',
      published: false,
      ownerId: 'alice',
    });
    expect((await gw.call('GET', `/v1/skills/${res.body.id}`, { as: 'bob' })).status).toBe(200);
  });

  it('refuses members 403, a taken slug 409 and bad fields 400', async () => {
    const body = { slug: 'member-made', name: 'M', description: 'M.', instructions: '' };
    expect((await gw.call('POST', '/v1/skills', { as: 'bob', body })).status).toBe(403);
    const taken = await gw.call('POST', '/v1/skills', { as: 'alice', body: { ...body, slug: 'fact-check' } });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('conflict');
    for (const [slug, field] of [
      ['Bad Slug', 'slug'],
      ['compact', 'slug'],
    ]) {
      const bad = await gw.call('POST', '/v1/skills', { as: 'alice', body: { ...body, slug } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toMatch(new RegExp(`^${field}: `));
    }
    const noDescription = await gw.call('POST', '/v1/skills', {
      as: 'alice',
      body: { ...body, description: '' },
    });
    expect(noDescription.body.error.message).toMatch(/^description: /);
  });

  it('patches a skill; the slug stays; members may not', async () => {
    const [skill] = (await gw.call('GET', '/v1/skills')).body.filter(
      (s: { slug: string }) => s.slug === 'draft',
    );
    const res = await gw.call('PATCH', `/v1/skills/${skill.id}`, {
      as: 'carol',
      body: { published: true, description: 'Now published.' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'draft', published: true, description: 'Now published.' });
    expect((await gw.call('PATCH', `/v1/skills/${skill.id}`, { body: { slug: 'other' } })).status).toBe(400);
    expect(
      (await gw.call('PATCH', `/v1/skills/${skill.id}`, { as: 'bob', body: { name: 'x' } })).status,
    ).toBe(403);
  });
});
