import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { SseService } from './sse.service';

@Module({ controllers: [EventsController], providers: [SseService] })
export class EventsModule {}
