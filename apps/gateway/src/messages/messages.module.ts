import { Module } from '@nestjs/common';
import { CompactionRequestService } from './compaction-request.service';
import { MessageChecksService } from './message-checks.service';
import { MessagesController } from './messages.controller';
import { MessagesService } from './messages.service';
import { TurnOpeningService } from './turn-opening.service';

@Module({
  controllers: [MessagesController],
  providers: [MessagesService, MessageChecksService, TurnOpeningService, CompactionRequestService],
  exports: [MessagesService],
})
export class MessagesModule {}
