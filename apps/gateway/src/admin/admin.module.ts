import { Module } from '@nestjs/common';
import { AdminSessionController } from './admin-session.controller';
import { AdminSessionService } from './admin-session.service';

/** The queue dashboard's sessions; the dashboard itself is registered by createGatewayApp. */
@Module({
  controllers: [AdminSessionController],
  providers: [AdminSessionService],
  exports: [AdminSessionService],
})
export class AdminModule {}
