import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { BlobStoreModule } from '@portal/application';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import { RedisConnections, RedisModule } from '@portal/redis';
import { AccountController } from './account/account.controller';
import { AgentsModule } from './agents/agents.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { AuthModule } from './auth/auth.module';
import { BootstrapService } from './bootstrap/bootstrap.service';
import { ApiErrorFilter } from './common/api-error.filter';
import { AuthGuard } from './common/auth.guard';
import { TextInputPipe } from './common/text-input.pipe';
import { RateLimiter } from './common/rate-limit';
import type { GatewayConfig } from './config';
import { ConversationsModule } from './conversations/conversations.module';
import { CoreModule } from './core/core.module';
import { EventsModule } from './events/events.module';
import { HealthController } from './health/health.controller';
import { MessagesModule } from './messages/messages.module';
import { MetricsController } from './metrics/metrics.controller';
import { PromptPreviewModule } from './prompt-preview/prompt-preview.module';
import { SkillsModule } from './skills/skills.module';
import { TurnsModule } from './turns/turns.module';
import { WebModule } from './web/web.module';

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // First, so that it closes last.
        RedisModule.forRoot(config.redis, { prefix: config.prefix, retentionMs: config.eventRetentionMs }),
        DalModule.forRoot(config),
        BlobStoreModule.forRoot(config),
        QueueModule.forRoot(config),
        CoreModule.forRoot(config),
        AgentsModule,
        SkillsModule,
        ConversationsModule,
        MessagesModule,
        TurnsModule,
        EventsModule,
        PromptPreviewModule,
        AttachmentsModule.forRoot(config.attachments),
        AuthModule,
        WebModule,
      ],
      controllers: [HealthController, MetricsController, AccountController],
      providers: [
        BootstrapService,
        {
          provide: RateLimiter,
          useFactory: (redis: RedisConnections) =>
            new RateLimiter(config.rateLimit, { redis, prefix: config.prefix }),
          inject: [RedisConnections],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ApiErrorFilter },
        { provide: APP_PIPE, useClass: TextInputPipe },
      ],
    };
  }
}
