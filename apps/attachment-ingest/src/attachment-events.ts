import { Logger } from '@nestjs/common';
import type { AttachmentManifest, ConversationId } from '@portal/domain';
import type { ConversationEvents } from '@portal/redis';

/**
 * `attachment_progress` on the conversation's event stream, with the manifest as it now is.
 * Progress is best effort: Postgres holds the truth, and a client can always read the manifest. */
export class AttachmentEvents {
  private readonly logger = new Logger('AttachmentEvents');

  constructor(private readonly events: ConversationEvents) {}

  async progress(conversationId: ConversationId | null, attachment: AttachmentManifest): Promise<void> {
    if (conversationId === null) return;
    try {
      await this.events.publish(conversationId, { type: 'attachment_progress', attachment });
    } catch (err) {
      this.logger.warn(`progress of ${attachment.id} not published: ${(err as Error).message}`);
    }
  }
}
