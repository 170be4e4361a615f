import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import { AccountController } from './account/account.controller';
import { AgentsModule } from './agents/agents.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { BootstrapService } from './bootstrap/bootstrap.service';
import { ApiErrorFilter } from './common/api-error.filter';
import { AuthGuard } from './common/auth.guard';
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

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        DalModule.forRoot(config.databaseUrl),
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
      ],
      controllers: [HealthController, MetricsController, AccountController],
      providers: [
        BootstrapService,
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ApiErrorFilter },
      ],
    };
  }
}
