import { Module } from '@nestjs/common';
import { MessagesModule } from '../messages/messages.module';
import { TurnsController } from './turns.controller';
import { TurnsService } from './turns.service';

@Module({ imports: [MessagesModule], controllers: [TurnsController], providers: [TurnsService] })
export class TurnsModule {}
