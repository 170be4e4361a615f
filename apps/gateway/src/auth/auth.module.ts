import { Module } from '@nestjs/common';
import { AuthController } from './auth.controller';
import { Authenticator } from './authenticator.service';
import { OidcService } from './oidc.service';
import { SessionService } from './session.service';

/** Who is calling (API keys and browser sessions) and the browser sign-in through each org's provider. */
@Module({
  controllers: [AuthController],
  providers: [SessionService, OidcService, Authenticator],
  exports: [SessionService, OidcService, Authenticator],
})
export class AuthModule {}
