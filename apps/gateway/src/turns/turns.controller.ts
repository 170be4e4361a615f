import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { TurnId, type TurnStatus } from '@portal/domain';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { MessagesService } from '../messages/messages.service';
import { TurnsService, type TraceView, type TurnView, type UsageView } from './turns.service';

@Controller('v1/turns')
export class TurnsController {
  constructor(
    @Inject(TurnsService) private readonly turns: TurnsService,
    @Inject(MessagesService) private readonly messages: MessagesService,
  ) {}

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<TurnView> {
    return this.turns.get(caller, TurnId(id));
  }

  @Get(':id/usage')
  usage(@Caller() caller: Principal, @Param('id') id: string): Promise<UsageView[]> {
    return this.turns.usageOf(caller, TurnId(id));
  }

  @Get(':id/trace')
  trace(@Caller() caller: Principal, @Param('id') id: string): Promise<TraceView[]> {
    return this.turns.traceOf(caller, TurnId(id));
  }

  /** The body's shape depends on the request: `{ answer }` or `{ approved, note? }`. */
  @Post(':id/requests/:blockId')
  @HttpCode(202)
  answer(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Param('blockId') blockId: string,
    @Body() body: unknown,
  ): Promise<{ turnId: TurnId; status: TurnStatus }> {
    return this.turns.answer(caller, TurnId(id), blockId, body);
  }

  @Post(':id/cancel')
  @HttpCode(202)
  cancel(
    @Caller() caller: Principal,
    @Param('id') id: string,
  ): Promise<{ turnId: TurnId; status: TurnStatus }> {
    return this.turns.cancel(caller, TurnId(id));
  }

  @Post(':id/retry')
  @HttpCode(202)
  retry(@Caller() caller: Principal, @Param('id') id: string): Promise<{ turnId: string }> {
    return this.messages.retry(caller, TurnId(id));
  }
}
