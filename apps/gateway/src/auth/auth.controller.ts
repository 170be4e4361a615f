import type { OrgId } from '@portal/domain';
import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Caller, Public } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { OidcService, SIGN_IN_COOKIE, SIGN_IN_TTL_MS, callbackPath, type ProviderView } from './oidc.service';
import { cookie, originOf, readCookie, SESSION_COOKIE, SessionService } from './session.service';

/** API.md "Signing in from a browser". */
@Controller('v1/auth')
export class AuthController {
  constructor(
    @Inject(OidcService) private readonly oidc: OidcService,
    @Inject(SessionService) private readonly sessions: SessionService,
  ) {}

  @Get('providers')
  @Public()
  providers(): ProviderView[] {
    return this.oidc.list();
  }

  @Get('oidc/:orgId/login')
  @Public()
  async login(
    @Param('orgId') orgId: OrgId,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { origin, secure } = originOf(request);
    const { location, signIn } = await this.oidc.login(orgId, origin);
    const pending = cookie(SIGN_IN_COOKIE, signIn, {
      path: callbackPath(orgId),
      secure,
      maxAgeS: SIGN_IN_TTL_MS / 1000,
    });
    void reply.code(302).header('set-cookie', pending).header('location', location).send();
  }

  @Get('oidc/:orgId/callback')
  @Public()
  async callback(
    @Param('orgId') orgId: OrgId,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { secure } = originOf(request);
    const at = request.url.indexOf('?');
    const query = at < 0 ? '' : request.url.slice(at);
    const { user, name } = await this.oidc.callback(
      orgId,
      readCookie(request.headers.cookie, SIGN_IN_COOKIE),
      query,
    );
    // A session this browser still held ends: one browser, one session.
    const previous = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (previous) await this.sessions.end(previous);
    const token = await this.sessions.open(user, name);
    void reply
      .code(302)
      .header('set-cookie', [
        cookie(SESSION_COOKIE, token, { path: '/', secure }),
        cookie(SIGN_IN_COOKIE, '', { path: callbackPath(orgId), secure, maxAgeS: 0 }),
      ])
      .header('location', '/')
      .send();
  }

  /** Ends the browser session (an API key has none: nothing to end). */
  @Post('logout')
  @HttpCode(204)
  async logout(
    @Caller() caller: Principal,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    const token = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (caller.via === 'oidc' && token) await this.sessions.end(token);
    void reply.header(
      'set-cookie',
      cookie(SESSION_COOKIE, '', { path: '/', secure: originOf(request).secure, maxAgeS: 0 }),
    );
  }
}
