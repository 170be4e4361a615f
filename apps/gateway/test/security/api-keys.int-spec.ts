import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { hashApiKey, UserRepository } from '@portal/dal';
import { KNOWN_KEY_TTL_MS } from '../../src/auth/authenticator.service';
import { KEYS, startGateway, type Harness } from '../gateway-harness.util';

/**
 * Issue part 4: API keys are stored hashed and never compared as secrets. The database of a
 * bootstrapped gateway holds each key's sha256 and nowhere the key itself; the lookup sends only
 * the hash to Postgres (an indexed equality on a digest the caller cannot steer, so its timing
 * says nothing about any stored key); and no code path compares a key or token with `===`.
 */
let gw: Harness;

beforeAll(async () => {
  gw = await startGateway();
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

/** Every row of every table of the public schema, as text. */
async function dumpDatabase(url: string): Promise<Record<string, string[]>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    const dump: Record<string, string[]> = {};
    for (const { table_name } of tables.rows) {
      const rows = await client.query<{ row: string }>(`SELECT t::text AS row FROM "${table_name}" t`);
      dump[table_name] = rows.rows.map((r) => r.row);
    }
    return dump;
  } finally {
    await client.end();
  }
}

describe('API keys at rest', () => {
  it('are stored as their sha256, one row per key, and no table holds a key itself', async () => {
    const dump = await dumpDatabase(gw.db.url);
    const hashes = (await gw.db.dataSource.query(`SELECT key_hash FROM api_keys ORDER BY key_hash`)).map(
      (r: { key_hash: string }) => r.key_hash,
    );
    const expected = Object.values(KEYS).map((key) => createHash('sha256').update(key, 'utf8').digest('hex'));
    expect(hashes).toEqual([...expected].sort());
    for (const key of Object.values(KEYS)) {
      for (const [table, rows] of Object.entries(dump)) {
        expect({ table, holdsKey: rows.some((row) => row.includes(key)) }).toEqual({
          table,
          holdsKey: false,
        });
      }
    }
    const column = await gw.db.dataSource.query(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'api_keys'::regclass AND contype = 'c'`,
    );
    expect(column.map((c: { def: string }) => c.def).join(' ')).toContain('[0-9a-f]{64}');
  });
});

describe('API key lookup', () => {
  /** The SQL and parameters of every query `ds` runs while `fn` does. */
  async function queriesOf(
    ds: DataSource,
    fn: () => Promise<unknown>,
  ): Promise<{ sql: string; params: unknown[] }[]> {
    const seen: { sql: string; params: unknown[] }[] = [];
    const create = ds.createQueryRunner.bind(ds);
    const spy = jest.spyOn(ds, 'createQueryRunner').mockImplementation((mode) => {
      const runner: QueryRunner = create(mode);
      const query = runner.query.bind(runner);
      runner.query = ((sql: string, params?: unknown[], ...rest: unknown[]) => {
        seen.push({ sql, params: params ?? [] });
        return (query as (...args: unknown[]) => Promise<unknown>)(sql, params, ...rest);
      }) as QueryRunner['query'];
      return runner;
    });
    try {
      await fn();
    } finally {
      spy.mockRestore();
    }
    return seen;
  }

  it('sends Postgres only the hash, as an equality on the indexed key_hash: no secret is compared in code', async () => {
    const users = new UserRepository(gw.db.dataSource);
    for (const [apiKey, found] of [
      [KEYS.alice, { id: 'alice', orgId: 'acme', role: 'author' }],
      ['pk_test_alice_authoR', null],
      ['pk_', null],
    ] as const) {
      let user: unknown;
      const queries = await queriesOf(
        gw.db.dataSource,
        async () => (user = await users.findByApiKey(apiKey)),
      );
      expect(user === null ? null : user).toEqual(found === null ? null : expect.objectContaining(found));
      const sent = JSON.stringify(queries);
      expect(sent).not.toContain(apiKey);
      expect(
        queries.some(
          (q) => q.params.includes(hashApiKey(apiKey)) && /key_hash"? = \$1|"k"\."key_hash" = /i.test(q.sql),
        ),
      ).toBe(true);
    }
    const index = await gw.db.dataSource.query(
      `SELECT indexdef FROM pg_indexes WHERE tablename = 'api_keys'`,
    );
    expect(index.map((i: { indexdef: string }) => i.indexdef).join('\n')).toMatch(
      /UNIQUE INDEX .* \(key_hash\)/,
    );
  });

  it('is the only way a key or session token is checked: no code compares one with === or !==', () => {
    const root = path.resolve(__dirname, '..', '..', '..', '..');
    const files = [
      'apps/gateway/src/common/auth.guard.ts',
      'apps/gateway/src/auth/authenticator.service.ts',
      'apps/gateway/src/auth/session.service.ts',
      'apps/gateway/src/auth/oidc.service.ts',
      'libs/dal/src/repositories/user.repository.ts',
      'libs/dal/src/api-key.util.ts',
    ];
    for (const file of files) {
      const source = readFileSync(path.join(root, file), 'utf8');
      expect({
        file,
        compares:
          /\b(apiKey|token|keyHash|key_hash|secret)\b\s*[!=]==|[!=]==\s*\b(apiKey|token|keyHash|secret)\b/.test(
            source,
          ),
      }).toEqual({
        file,
        compares: false,
      });
    }
    // The authenticator hands the key to the hashed lookup and nothing else.
    const guard = readFileSync(path.join(root, 'apps/gateway/src/auth/authenticator.service.ts'), 'utf8');
    expect(guard).toMatch(/this\.users\.findByApiKey\(apiKey\)/);
  });
});

/** Runs `fn` with `key` removed from the database, then gives it back to its user. */
async function withKeyRemoved(key: string, fn: () => Promise<void>): Promise<void> {
  const users = new UserRepository(gw.db.dataSource);
  const owner = (await users.findByApiKey(key))!;
  await gw.db.dataSource.query(`DELETE FROM api_keys WHERE key_hash = $1`, [hashApiKey(key)]);
  try {
    await fn();
  } finally {
    await users.addApiKey(owner.orgId, owner.id, key);
  }
}

describe('a found key', () => {
  it('is remembered for a short while, so a key removed from the database stops working within it', async () => {
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      expect((await gw.call('GET', '/v1/me', { as: 'mallory' })).status).toBe(200);
      await withKeyRemoved(KEYS.mallory, async () => {
        // Remembered: the request reads no key from the database.
        expect((await gw.call('GET', '/v1/me', { as: 'mallory' })).status).toBe(200);
        clock.mockReturnValue(now + KNOWN_KEY_TTL_MS + 1);
        expect((await gw.call('GET', '/v1/me', { as: 'mallory' })).status).toBe(401);
      });
    } finally {
      clock.mockRestore();
    }
  });

  it('is never remembered while unknown: a key added afterwards works at once', async () => {
    await withKeyRemoved(KEYS.bob, async () => {
      expect((await gw.call('GET', '/v1/me', { as: 'bob' })).status).toBe(401);
    });
    expect((await gw.call('GET', '/v1/me', { as: 'bob' })).status).toBe(200);
  });
});
