import { Body, Controller, Get, Inject, Param, Post } from '@nestjs/common';
import type { z } from 'zod';
import { createConversationSchema } from '@portal/contracts';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { ZodBody } from '../common/validation.pipe';
import {
  ConversationsService,
  type ConversationSummary,
  type ConversationView,
} from './conversations.service';
import type { MessageView } from './transcript.util';

@Controller('v1/conversations')
export class ConversationsController {
  constructor(@Inject(ConversationsService) private readonly conversations: ConversationsService) {}

  @Post()
  create(
    @Caller() caller: Principal,
    @Body(new ZodBody(createConversationSchema)) body: z.output<typeof createConversationSchema>,
  ): Promise<{ id: string }> {
    return this.conversations.create(caller, body.agentId);
  }

  @Get()
  list(@Caller() caller: Principal): Promise<ConversationSummary[]> {
    return this.conversations.list(caller);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<ConversationView> {
    return this.conversations.get(caller, id);
  }

  @Get(':id/messages')
  messages(@Caller() caller: Principal, @Param('id') id: string): Promise<MessageView[]> {
    return this.conversations.messages(caller, id);
  }
}
