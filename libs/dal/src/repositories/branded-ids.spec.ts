import { OrgId, TurnId } from '@portal/domain';
import type { TurnLeaseRepository } from './turn-lease.repository';

describe('ids are typed by what they name', () => {
  // Checked by the type checker (`npm run typecheck` covers specs): never called.
  function compiles(repo: TurnLeaseRepository, orgId: OrgId, turnId: TurnId) {
    void repo.claim(orgId, turnId, 'worker-1', 1_000);
    // @ts-expect-error a turn id where the org id goes, and the other way round
    void repo.claim(turnId, orgId, 'worker-1', 1_000);
    // @ts-expect-error a bare string is not an org id until named as one where it enters
    void repo.claim('acme', turnId, 'worker-1', 1_000);
  }

  it('is the plain string at run time', () => {
    expect(typeof compiles).toBe('function');
    expect(OrgId('acme')).toBe('acme');
    expect(JSON.stringify({ turnId: TurnId('t-1') })).toBe('{"turnId":"t-1"}');
  });
});
