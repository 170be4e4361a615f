import { AgentSkillEntity } from './agent-skill.entity';
import { AgentEntity } from './agent.entity';
import { ApiKeyEntity } from './api-key.entity';
import { AttachmentBlobEntity } from './attachment-blob.entity';
import { AttachmentPageEntity } from './attachment-page.entity';
import { AttachmentEntity } from './attachment.entity';
import { BlockEntity } from './block.entity';
import { ConversationEntity } from './conversation.entity';
import { MessageEntity } from './message.entity';
import { OrgEntity } from './org.entity';
import { PersonRequestEntity } from './person-request.entity';
import { SkillEntity } from './skill.entity';
import { ToolResultEntity } from './tool-result.entity';
import { TraceEntryEntity } from './trace-entry.entity';
import { TurnEntity } from './turn.entity';
import { UsageRowEntity } from './usage-row.entity';
import { UserEntity } from './user.entity';

export {
  AgentEntity,
  AgentSkillEntity,
  ApiKeyEntity,
  AttachmentBlobEntity,
  AttachmentEntity,
  AttachmentPageEntity,
  BlockEntity,
  ConversationEntity,
  MessageEntity,
  OrgEntity,
  PersonRequestEntity,
  SkillEntity,
  ToolResultEntity,
  TraceEntryEntity,
  TurnEntity,
  UsageRowEntity,
  UserEntity,
};

export const ENTITIES = [
  OrgEntity,
  UserEntity,
  ApiKeyEntity,
  AgentEntity,
  SkillEntity,
  AgentSkillEntity,
  ConversationEntity,
  TurnEntity,
  MessageEntity,
  BlockEntity,
  PersonRequestEntity,
  ToolResultEntity,
  AttachmentEntity,
  AttachmentPageEntity,
  AttachmentBlobEntity,
  TraceEntryEntity,
  UsageRowEntity,
];
