import { AgentId, ConversationId } from '@portal/domain';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import type { z } from 'zod';
import { createConversationSchema, renameConversationSchema, searchQuerySchema } from '@portal/contracts';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { parseInput, ZodBody } from '../common/validation.pipe';
import {
  ConversationsService,
  type ConversationHitView,
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
    return this.conversations.create(caller, AgentId(body.agentId));
  }

  /** With a non-blank `q`, the search (API.md `GET /v1/conversations?q=`); without, the list. */
  @Get()
  list(
    @Caller() caller: Principal,
    @Query('q') q: unknown,
  ): Promise<ConversationSummary[] | ConversationHitView[]> {
    const query = parseInput(searchQuerySchema, q, 'q');
    return query ? this.conversations.search(caller, query) : this.conversations.list(caller);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<ConversationView> {
    return this.conversations.get(caller, ConversationId(id));
  }

  @Patch(':id')
  rename(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Body(new ZodBody(renameConversationSchema)) body: z.output<typeof renameConversationSchema>,
  ): Promise<ConversationView> {
    return this.conversations.rename(caller, ConversationId(id), body.title);
  }

  @Delete(':id')
  @HttpCode(204)
  delete(@Caller() caller: Principal, @Param('id') id: string): Promise<void> {
    return this.conversations.delete(caller, ConversationId(id));
  }

  @Get(':id/messages')
  messages(@Caller() caller: Principal, @Param('id') id: string): Promise<MessageView[]> {
    return this.conversations.messages(caller, ConversationId(id));
  }
}
