import { Module } from '@nestjs/common';
import { RedisConnections, ConversationEventReader } from '@portal/redis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { EventsController } from './events.controller';
import { SseService } from './sse.service';

@Module({
  controllers: [EventsController],
  providers: [
    {
      provide: ConversationEventReader,
      useFactory: (config: GatewayConfig, redis: RedisConnections) =>
        new ConversationEventReader(redis, config.prefix),
      inject: [GATEWAY_CONFIG, RedisConnections],
    },
    SseService,
  ],
})
export class EventsModule {}
