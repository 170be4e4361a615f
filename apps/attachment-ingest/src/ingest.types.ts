import type { ManifestPatch } from '@portal/dal';
import type { AttachmentManifest, ConversationId, OrgId } from '@portal/domain';

/** One attachment being read, as the handler hands it to the picture and document services. */
export interface IngestContext {
  orgId: OrgId;
  attachment: AttachmentManifest;
  /** Where it was uploaded, if anywhere: whose model reduces a picture, where progress is published. */
  conversationId: ConversationId | null;
  /** The model of that conversation's agent, which reads a picture (null without a conversation). */
  model: string | null;
  /** Aborted when the worker shuts down: stop between pages and hand the job back. */
  signal?: AbortSignal;
  /** The uploaded bytes (null when they are missing), fetched while the status turns `reading`. */
  original: Promise<Buffer | null>;
  /** Writes the patch to the manifest and publishes the progress (unless `publish` is false). */
  report(patch: ManifestPatch, publish?: boolean): Promise<AttachmentManifest>;
  /** Publishes the manifest a write returned as the attachment's progress. */
  publish(manifest: AttachmentManifest): Promise<void>;
}
