import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { QueueName } from '@portal/contracts';
import { BullMqClient } from '@portal/queue';
import { toApiError } from '../common/api-error.util';
import { DomainError } from '@portal/domain';
import { Authenticator } from '../auth/authenticator.service';
import type { GatewayConfig } from '../config';

export const QUEUE_BOARD_PATH = '/admin/queues';

/**
 * Bull Board for the three queues at /admin/queues: its page, assets and API are Fastify routes
 * outside Nest, so an `onRequest` hook of their own scope lets admins only in (401 without a key or
 * the browser session, 403 for another role), answering in the API's error shape. The queues hold
 * every org's jobs, so only admins of the operator orgs (PORTAL_OPERATOR_ORGS) see them. The
 * board's own scripts cannot send X-Portal-CSRF, so its requests prove themselves by their Origin.
 */
export async function registerQueueBoard(app: NestFastifyApplication, config: GatewayConfig): Promise<void> {
  const queues = app.get(BullMqClient);
  const auth = app.get(Authenticator);
  const board = new FastifyAdapter();
  createBullBoard({
    queues: Object.values(QueueName).map((name) => new BullMQAdapter(queues.queue(name))),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'Portal queues' } },
  });
  board.setBasePath(QUEUE_BOARD_PATH);
  await app.register(async (scope: FastifyInstance) => {
    scope.addHook('onRequest', async (request, reply) => {
      try {
        const { principal } = await auth.authenticate(request, { sameOriginIsEnough: true });
        if (principal.role !== 'admin')
          throw new DomainError('forbidden', `Role ${principal.role} may not see the queues; it needs admin`);
        if (!config.operatorOrgs.includes(principal.orgId))
          throw new DomainError(
            'forbidden',
            "The queues hold every org's jobs: only admins of PORTAL_OPERATOR_ORGS see them",
          );
        request.principal = principal;
      } catch (err) {
        const { status, body } = toApiError(err);
        return reply.code(status).send(body);
      }
    });
    await scope.register(board.registerPlugin(), { prefix: QUEUE_BOARD_PATH });
  });
}
