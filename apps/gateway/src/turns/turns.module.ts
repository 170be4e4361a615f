import { Module } from '@nestjs/common';
import { TurnsController } from './turns.controller';
import { TurnsService } from './turns.service';

@Module({ controllers: [TurnsController], providers: [TurnsService] })
export class TurnsModule {}
