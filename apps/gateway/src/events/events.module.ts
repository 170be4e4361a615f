import { Module } from '@nestjs/common';
import { ConversationEventReader } from '@portal/queue';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { EventsController } from './events.controller';
import { SseService } from './sse.service';

@Module({
  controllers: [EventsController],
  providers: [
    {
      provide: ConversationEventReader,
      useFactory: (config: GatewayConfig) => new ConversationEventReader(config.redisUrl, config.prefix),
      inject: [GATEWAY_CONFIG],
    },
    SseService,
  ],
})
export class EventsModule {}
