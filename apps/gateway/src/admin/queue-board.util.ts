import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { QueueName } from '@portal/contracts';
import { QueueService } from '@portal/queue';
import { toApiError } from '../common/api-error.util';
import { AdminSessionService } from './admin-session.service';

export const QUEUE_BOARD_PATH = '/admin/queues';

/**
 * Bull Board for the three queues at /admin/queues: its page, assets and API are Fastify routes
 * outside Nest, so an `onRequest` hook of their own scope lets admins only in (401 without a key or
 * session, 403 for another role), answering in the API's error shape.
 */
export async function registerQueueBoard(app: NestFastifyApplication): Promise<void> {
  const queues = app.get(QueueService);
  const sessions = app.get(AdminSessionService);
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
        request.principal = await sessions.authenticate(request.headers);
      } catch (err) {
        const { status, body } = toApiError(err);
        return reply.code(status).send(body);
      }
    });
    await scope.register(board.registerPlugin(), { prefix: QUEUE_BOARD_PATH });
  });
}
