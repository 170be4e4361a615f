import { ConversationId } from '@portal/domain';
import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { ZodBody } from '../common/validation.pipe';
import { postMessageSchema, type PostMessage, type PostMessageResult } from '@portal/contracts';
import { MessagesService } from './messages.service';

@Controller('v1/conversations')
export class MessagesController {
  constructor(@Inject(MessagesService) private readonly messages: MessagesService) {}

  @Post(':id/messages')
  @HttpCode(202)
  post(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Body(new ZodBody(postMessageSchema)) body: PostMessage,
  ): Promise<PostMessageResult> {
    return this.messages.post(caller, ConversationId(id), body);
  }
}
