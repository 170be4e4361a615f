import { Controller, Get, Headers, Inject, Param, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ConversationId, DomainError } from '@portal/domain';
import { ConversationEvents } from '@portal/redis';
import { Caller } from '../common/auth.decorator';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { isStreamId, SseService } from './sse.service';

@Controller('v1/conversations')
export class EventsController {
  constructor(
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
    @Inject(SseService) private readonly sse: SseService,
  ) {}

  /**
   * With `Last-Event-ID` (or `?lastEventId=`, for clients that cannot set headers) the stream
   * replays what is retained after it; without, it starts from now.
   */
  @Get(':id/events')
  async stream(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Headers('last-event-id') header: string | undefined,
    @Query('lastEventId') query: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const conversation = await this.owned.conversation(caller, ConversationId(id));
    const lastEventId = header || query;
    if (lastEventId && !isStreamId(lastEventId)) {
      throw new DomainError('validation_failed', `Last-Event-ID: "${lastEventId}" is not an event id`);
    }
    const afterId = lastEventId || (await this.events.lastId(conversation.id));
    this.sse.stream(reply, caller, conversation.id, afterId);
  }
}
