import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Caller, Roles } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { ADMIN_COOKIE, ADMIN_SESSION_TTL_MS, AdminSessionService } from './admin-session.service';
import { QUEUE_BOARD_PATH } from './queue-board.util';

@Controller('v1/admin/session')
export class AdminSessionController {
  constructor(@Inject(AdminSessionService) private readonly sessions: AdminSessionService) {}

  /**
   * Admins only: sets the dashboard's session cookie (HttpOnly, SameSite=Strict, path
   * /admin/queues, 30 minutes; Secure over HTTPS). Call it from the browser that opens the
   * dashboard, e.g. `fetch('/v1/admin/session', { method: 'POST', headers: { authorization } })`.
   */
  @Post()
  @HttpCode(200)
  @Roles('admin')
  async open(
    @Caller() caller: Principal,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ dashboard: string; expiresAt: string }> {
    const { token, expiresAt } = await this.sessions.open(caller);
    const https = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
    const cookie = [
      `${ADMIN_COOKIE}=${token}`,
      `Path=${QUEUE_BOARD_PATH}`,
      `Max-Age=${ADMIN_SESSION_TTL_MS / 1000}`,
      'HttpOnly',
      'SameSite=Strict',
      ...(https ? ['Secure'] : []),
    ];
    void reply.header('set-cookie', cookie.join('; '));
    return { dashboard: QUEUE_BOARD_PATH, expiresAt: expiresAt.toISOString() };
  }
}
