import { Controller, Get, Inject } from '@nestjs/common';
import { publicModel, type PublicModel } from '@portal/model';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';

/** Who the caller is and which models they can choose from. */
@Controller('v1')
export class AccountController {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  /** With a browser session, also the person's name and the CSRF token state-changing requests carry. */
  @Get('me')
  me(@Caller() caller: Principal): Principal {
    const { userId, orgId, role, via, name, csrf } = caller;
    return { userId, orgId, role, via, ...(name && { name }), ...(csrf && { csrf }) };
  }

  @Get('models')
  models(): PublicModel[] {
    return this.config.catalogue.map(publicModel);
  }
}
