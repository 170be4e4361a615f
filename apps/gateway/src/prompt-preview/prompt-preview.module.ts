import { Module } from '@nestjs/common';
import { PromptPreviewController } from './prompt-preview.controller';
import { PromptPreviewService } from './prompt-preview.service';

@Module({ controllers: [PromptPreviewController], providers: [PromptPreviewService] })
export class PromptPreviewModule {}
