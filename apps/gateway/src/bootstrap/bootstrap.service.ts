import { AgentId, OrgId, UserId } from '@portal/domain';
import { Inject, Injectable, Logger, Optional, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AgentRepository, DalError, OrgRepository, SkillRepository, UserRepository } from '@portal/dal';
import { findModel } from '@portal/model';
import { oidcProviders } from '../auth/oidc-config';
import { OidcService } from '../auth/oidc.service';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { BootstrapError, newApiKey, readBootstrapFile, type BootstrapFile } from './bootstrap-file.util';

export const DEMO = { orgId: OrgId('demo'), userId: UserId('demo'), agentId: AgentId('assistant') } as const;

export interface BootstrapResult {
  /** A demo API key created by this run: printed once, stored only hashed. */
  newDemoApiKey: string | null;
}

/**
 * Applies PORTAL_BOOTSTRAP_FILE at boot (before the gateway listens), in one transaction, with
 * upserts so a restart changes nothing. It adds API keys; a user the file no longer lists is
 * removed (their keys go, their sessions are refused), unless a sign-in created them. The orgs'
 * identity providers are handed to the OIDC sign-in.
 *
 * Without the file it makes sure the demo org, its admin `demo` and the agent `assistant` exist
 * without overwriting what people changed since; the demo user gets a key (printed in the log)
 * only when it holds none, so a restart keeps the key printed the first time.
 */
@Injectable()
export class BootstrapService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Bootstrap');

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Optional() @Inject(OidcService) private readonly oidc?: OidcService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { newDemoApiKey } = await this.apply();
    if (newDemoApiKey) {
      this.logger.log(
        `Demo org "${DEMO.orgId}": user "${DEMO.userId}" (admin) has the API key ${newDemoApiKey} — ` +
          'shown this once; it is stored hashed.',
      );
    }
  }

  async apply(): Promise<BootstrapResult> {
    const file = this.config.bootstrapFile;
    if (!file) return { newDemoApiKey: await this.applyDemo() };
    const doc = readBootstrapFile(file, this.config);
    await this.dataSource.transaction((em) => this.applyFile(em, doc, file));
    this.oidc?.use(oidcProviders(doc.orgs, this.config.env).providers);
    return { newDemoApiKey: null };
  }

  private async applyFile(em: EntityManager, doc: BootstrapFile, file: string): Promise<void> {
    const [orgs, users, skills, agents] = [
      new OrgRepository(em),
      new UserRepository(em),
      new SkillRepository(em),
      new AgentRepository(em),
    ];
    for (const [o, org] of doc.orgs.entries()) {
      const orgId = OrgId(org.id);
      await orgs.upsert(orgId, org.name ?? org.id);
      for (const [u, user] of org.users.entries()) {
        const userId = UserId(user.id);
        await users.upsert(orgId, userId, user.role);
        try {
          await users.addApiKey(orgId, userId, user.apiKey);
        } catch (err) {
          if (!(err instanceof DalError && err.code === 'api_key_taken')) throw err;
          throw new BootstrapError(
            `PORTAL_BOOTSTRAP_FILE ${file}: orgs[${o}].users[${u}].apiKey is already held by another user`,
          );
        }
      }
      const removed = await users.removeUnlisted(
        orgId,
        org.users.map((user) => user.id),
      );
      if (removed.length) this.logger.log(`Org "${org.id}": removed users ${removed.join(', ')}`);
      const skillIds = new Map<string, string>();
      for (const { owner, ...skill } of org.skills) {
        const stored = await skills.upsert(orgId, { ...skill, ownerId: owner });
        skillIds.set(stored.slug, stored.id);
      }
      for (const { skills: slugs, ...agent } of org.agents) {
        const agentId = AgentId(agent.id);
        await agents.upsert(orgId, { ...agent, id: agentId });
        await agents.setSkills(
          orgId,
          agentId,
          slugs.map((slug) => skillIds.get(slug)!),
        );
      }
    }
  }

  /** Returns the new demo key, or null when the demo user already had one. */
  private async applyDemo(): Promise<string | null> {
    const defaultModel = this.config.catalogue[0].id;
    return this.dataSource.transaction(async (em) => {
      const [users, agents] = [new UserRepository(em), new AgentRepository(em)];
      await new OrgRepository(em).upsert(DEMO.orgId, 'Demo');
      if (!(await users.get(DEMO.orgId, DEMO.userId))) await users.upsert(DEMO.orgId, DEMO.userId, 'admin');
      const agent = await agents.get(DEMO.orgId, DEMO.agentId);
      if (!agent) {
        await agents.upsert(DEMO.orgId, {
          id: DEMO.agentId,
          name: 'Assistant',
          instructions: '',
          model: defaultModel,
          effort: 'medium',
          tools: [],
          reviewer: null,
          compactionGuidance: null,
        });
      } else if (!findModel(this.config.catalogue, agent.model)) {
        // The catalogue changed under the demo agent: move it to the default model.
        await agents.upsert(DEMO.orgId, { ...agent, model: defaultModel });
      }
      if (await users.hasApiKey(DEMO.orgId, DEMO.userId)) return null;
      const apiKey = newApiKey();
      await users.addApiKey(DEMO.orgId, DEMO.userId, apiKey);
      return apiKey;
    });
  }
}
