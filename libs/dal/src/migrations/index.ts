import { InitialSchema1767225600000 } from './1767225600000-initial-schema';
import { BlobsWithoutAttachmentFk1767312000000 } from './1767312000000-blobs-without-attachment-fk';
import { PersonTextIndexes1767398400000 } from './1767398400000-person-text-indexes';
import { PersonRequests1767484800000 } from './1767484800000-person-requests';
import { SkillSelectTraceOnly1767571200000 } from './1767571200000-skill-select-trace-only';
import { McpServers1796311824000 } from './1796311824000-mcp-servers';
import { UserOrigin1796400000000 } from './1796400000000-user-origin';
import { DocumentCharsAsSent1796500000000 } from './1796500000000-document-chars-as-sent';
import { ReducedPicturePerLimit1796600000000 } from './1796600000000-reduced-picture-per-limit';
import { ConversationSearch1796740000000 } from './1796740000000-conversation-search';
import { TurnSteeringCount1796800000000 } from './1796800000000-turn-steering-count';

/** Every migration, oldest first. Hand-written; the schema is never synchronised from entities. */
export const MIGRATIONS = [
  InitialSchema1767225600000,
  BlobsWithoutAttachmentFk1767312000000,
  PersonTextIndexes1767398400000,
  PersonRequests1767484800000,
  SkillSelectTraceOnly1767571200000,
  McpServers1796311824000,
  UserOrigin1796400000000,
  DocumentCharsAsSent1796500000000,
  ReducedPicturePerLimit1796600000000,
  ConversationSearch1796740000000,
  TurnSteeringCount1796800000000,
];
