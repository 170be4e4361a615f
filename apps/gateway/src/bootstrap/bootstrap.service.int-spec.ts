import { AgentId, OrgId, UserId } from '@portal/domain';
import { AgentRepository, OrgRepository, UserRepository } from '@portal/dal';
import { createTestDatabase, deleteRedisPrefix, type TestDatabase } from '@portal/testing';
import {
  MODELS_YAML,
  STANDARD_BOOTSTRAP,
  startGateway,
  tempFile,
  testEnv,
} from '../../test/gateway-harness.util';
import { readConfig } from '../config';
import { createGatewayApp } from '../gateway-app.util';
import { BootstrapService, DEMO } from './bootstrap.service';

let db: TestDatabase;
beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

const TABLES = ['orgs', 'users', 'api_keys', 'agents', 'skills', 'agent_skills'];
/** Every row the bootstrap writes, without `updated_at` (an upsert touches it) and key row ids. */
async function snapshot(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    const rows: Record<string, unknown>[] = await db.dataSource.query(`SELECT * FROM ${table} ORDER BY 1, 2`);
    out[table] = rows.map(({ updated_at: _updated, ...row }) => row);
  }
  return out;
}

function service(env: Record<string, string>) {
  return new BootstrapService(readConfig(testEnv(db, env)), db.dataSource);
}

const fileEnv = (doc: unknown) => ({
  PORTAL_BOOTSTRAP_FILE: tempFile('bootstrap.json', JSON.stringify(doc)),
});

describe('the bootstrap file', () => {
  it('is applied idempotently: a second run changes nothing', async () => {
    await service(fileEnv(STANDARD_BOOTSTRAP)).apply();
    const first = await snapshot();
    expect(first['orgs']).toHaveLength(2);
    expect(first['users']).toHaveLength(5);
    expect(first['agent_skills']).toHaveLength(6);
    expect(await service(fileEnv(STANDARD_BOOTSTRAP)).apply()).toEqual({ newDemoApiKey: null });
    expect(await snapshot()).toEqual(first);
    expect(await new UserRepository(db.dataSource).findByApiKey('pk_test_bob_member')).toEqual({
      orgId: 'acme',
      id: 'bob',
      role: 'member',
    });
  });

  it('updates what the file changes, keeping skill ids', async () => {
    await service(fileEnv(STANDARD_BOOTSTRAP)).apply();
    const before = await db.dataSource.query(`SELECT id FROM skills WHERE slug = 'fact-check'`);
    const changed = structuredClone(STANDARD_BOOTSTRAP) as any;
    changed.orgs[0].agents[0].name = 'Senior researcher';
    changed.orgs[0].agents[0].skills = ['style-guide'];
    changed.orgs[0].skills[0].description = 'Check every claim.';
    await service(fileEnv(changed)).apply();
    const agents = new AgentRepository(db.dataSource);
    expect((await agents.get(OrgId('acme'), AgentId('researcher')))!.name).toBe('Senior researcher');
    expect(await db.dataSource.query(`SELECT id, description FROM skills WHERE slug = 'fact-check'`)).toEqual(
      [{ id: before[0].id, description: 'Check every claim.' }],
    );
    expect(await agents.listSkillIds(OrgId('acme'), AgentId('researcher'))).toHaveLength(1);
  });

  it('stops the boot, naming the file and field, and writes nothing', async () => {
    const bad = structuredClone(STANDARD_BOOTSTRAP) as any;
    bad.orgs[1].agents[0].model = 'gpt-99';
    const env = testEnv(db, fileEnv(bad));
    const app = await createGatewayApp(readConfig(env), { logger: false });
    try {
      await expect(app.init()).rejects.toThrow(
        `PORTAL_BOOTSTRAP_FILE ${env['PORTAL_BOOTSTRAP_FILE']}:\n  - orgs[1].agents[0] (rival).model: "gpt-99" is not in the model catalogue`,
      );
    } finally {
      await app.close();
      await deleteRedisPrefix(env['REDIS_URL']!, env['PORTAL_PREFIX']!);
    }
    expect((await snapshot())['orgs']).toEqual([]);
  });

  it('refuses a key another user already holds, and rolls back', async () => {
    await service(fileEnv(STANDARD_BOOTSTRAP)).apply();
    const stolen = structuredClone(STANDARD_BOOTSTRAP) as any;
    // A key held outside the file's orgs: a key of a user the file lists twice is refused when
    // the file is read, and one of a user it drops is deleted with that user.
    const outside = new UserRepository(db.dataSource);
    await new OrgRepository(db.dataSource).upsert(OrgId('initech'), 'Initech');
    await outside.upsert(OrgId('initech'), UserId('trent'), 'admin');
    await outside.addApiKey(OrgId('initech'), UserId('trent'), 'pk_test_trent_admin');
    stolen.orgs[1].users.push({ id: 'eve', role: 'admin', apiKey: 'pk_test_trent_admin' });
    stolen.orgs[0].users.splice(0, 1);
    stolen.orgs[0].skills.forEach((s: { owner: string }) => (s.owner = 'dave'));
    const before = await snapshot();
    await expect(service(fileEnv(stolen)).apply()).rejects.toThrow(
      /orgs\[1\]\.users\[1\]\.apiKey is already held by another user/,
    );
    expect(await snapshot()).toEqual(before);
  });
});

describe('a user the file no longer lists', () => {
  it('is removed with their keys, and is back when listed again', async () => {
    await service(fileEnv(STANDARD_BOOTSTRAP)).apply();
    const users = new UserRepository(db.dataSource);
    const withoutBob = structuredClone(STANDARD_BOOTSTRAP) as any;
    withoutBob.orgs[0].users = withoutBob.orgs[0].users.filter((u: { id: string }) => u.id !== 'bob');
    await service(fileEnv(withoutBob)).apply();
    expect(await users.get(OrgId('acme'), UserId('bob'))).toBeNull();
    expect(await users.findByApiKey('pk_test_bob_member')).toBeNull();
    expect(await db.dataSource.query(`SELECT id FROM api_keys WHERE user_id = 'bob'`)).toEqual([]);
    expect(await users.get(OrgId('acme'), UserId('alice'))).toEqual({
      orgId: 'acme',
      id: 'alice',
      role: 'author',
    });
    // Removed, not deleted: what bob wrote stays with the org.
    expect(
      await db.dataSource.query(`SELECT removed_at IS NOT NULL AS removed FROM users WHERE id = 'bob'`),
    ).toEqual([{ removed: true }]);

    await service(fileEnv(STANDARD_BOOTSTRAP)).apply();
    expect(await users.findByApiKey('pk_test_bob_member')).toEqual({
      orgId: 'acme',
      id: 'bob',
      role: 'member',
    });
  });
});

describe('without a bootstrap file', () => {
  it('creates the demo org, admin and agent, and a key only the first time', async () => {
    const first = await service({}).apply();
    expect(first.newDemoApiKey).toMatch(/^pk_/);
    const users = new UserRepository(db.dataSource);
    expect(await users.findByApiKey(first.newDemoApiKey!)).toEqual({
      orgId: 'demo',
      id: 'demo',
      role: 'admin',
    });
    expect(await new AgentRepository(db.dataSource).get(DEMO.orgId, DEMO.agentId)).toMatchObject({
      model: 'seeing',
      effort: 'medium',
    });
    const before = await snapshot();
    expect(await service({}).apply()).toEqual({ newDemoApiKey: null });
    expect(await snapshot()).toEqual(before);
    const [{ key_hash: stored }] = before['api_keys'] as { key_hash: string }[];
    expect(stored).not.toContain(first.newDemoApiKey!.slice(3));
  });

  it('keeps changes people made to the demo agent, but moves it off a model that left the catalogue', async () => {
    await service({}).apply();
    const agents = new AgentRepository(db.dataSource);
    const agent = (await agents.get(DEMO.orgId, DEMO.agentId))!;
    await agents.upsert(DEMO.orgId, { ...agent, name: 'Helper', model: 'blind' });
    await service({}).apply();
    expect(await agents.get(DEMO.orgId, DEMO.agentId)).toMatchObject({
      name: 'Helper',
      model: 'blind',
    });

    const onlySeeing = MODELS_YAML.slice(0, MODELS_YAML.indexOf('  - id: blind'));
    await service({ PORTAL_MODELS_FILE: tempFile('models.yaml', onlySeeing) }).apply();
    expect(await agents.get(DEMO.orgId, DEMO.agentId)).toMatchObject({
      name: 'Helper',
      model: 'seeing',
    });
  });

  it('lets a restarted gateway keep the key printed the first time', async () => {
    const { newDemoApiKey } = await service({}).apply();
    const gw = await startGateway({ bootstrap: null, db });
    try {
      const me = await gw.call('GET', '/v1/me', {
        as: null,
        headers: { authorization: `Bearer ${newDemoApiKey}` },
      });
      expect(me.body).toEqual({ userId: 'demo', orgId: 'demo', role: 'admin', via: 'apiKey' });
      const [{ count }] = await db.dataSource.query(
        `SELECT count(*)::int FROM api_keys WHERE org_id = 'demo'`,
      );
      expect(count).toBe(1);
    } finally {
      await gw.close();
    }
  });
});
