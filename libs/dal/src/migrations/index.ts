import { InitialSchema1767225600000 } from './1767225600000-initial-schema';
import { BlobsWithoutAttachmentFk1767312000000 } from './1767312000000-blobs-without-attachment-fk';
import { PersonTextIndexes1767398400000 } from './1767398400000-person-text-indexes';
import { PersonRequests1767484800000 } from './1767484800000-person-requests';
import { DocumentCharsAsSent1767571200000 } from './1767571200000-document-chars-as-sent';
import { ReducedPicturePerLimit1767657600000 } from './1767657600000-reduced-picture-per-limit';

/** Every migration, oldest first. Hand-written; the schema is never synchronised from entities. */
export const MIGRATIONS = [
  InitialSchema1767225600000,
  BlobsWithoutAttachmentFk1767312000000,
  PersonTextIndexes1767398400000,
  PersonRequests1767484800000,
  DocumentCharsAsSent1767571200000,
  ReducedPicturePerLimit1767657600000,
];
