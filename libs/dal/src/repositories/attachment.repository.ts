import {
  type AttachmentId,
  type AttachmentKind,
  type AttachmentManifest,
  ConversationId,
  type OrgId,
  UserId,
} from '@portal/domain';
import { charCount } from '@portal/prompt';
import { type EntityManager, In } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { AttachmentPageEntity } from '../entities/attachment-page.entity';
import { AttachmentEntity } from '../entities/attachment.entity';
import { toAttachmentManifest } from '../mappers/attachment.mapper';

export interface NewAttachment {
  /** Chosen by the caller (a random uuid), so the original can be stored under it first. */
  id: string;
  userId: UserId;
  conversationId?: ConversationId | null;
  kind: AttachmentKind;
  filename: string;
  mimeType: string;
  byteSize: number;
  sha256: string;
}

export type ManifestPatch = Partial<
  Pick<
    AttachmentManifest,
    'status' | 'pagesRead' | 'pageCount' | 'unreadablePages' | 'headings' | 'chars' | 'picture' | 'error'
  >
>;

/** Between two pages of a document's whole text. */
export const PAGE_SEPARATOR = '\n\n';

/**
 * A document's size in `chars`: the characters (code points) of its whole text as a model reads
 * it, pages joined by PAGE_SEPARATOR (as getTexts joins them), so the prompt's inline rule can be
 * checked on the manifest before the text is read.
 */
export function wholeTextChars(pages: readonly string[]): number {
  return charCount(pages.join(PAGE_SEPARATOR));
}

/** One page's text, numbered from 1. */
export interface PageText {
  page: number;
  text: string;
}

/** The manifest's columns under the manifest's names, for RETURNING and SELECT. */
const MANIFEST_COLUMNS = `id, kind, filename, mime_type AS "mimeType", status, pages_read AS "pagesRead",
  page_count AS "pageCount", unreadable_pages AS "unreadablePages", headings, chars, picture, error`;

/** Each patchable field's column and the cast its parameter needs. */
const PATCH_COLUMNS: Record<keyof ManifestPatch, string> = {
  status: 'status = $',
  pagesRead: 'pages_read = $',
  pageCount: 'page_count = $',
  unreadablePages: 'unreadable_pages = $::int[]',
  headings: 'headings = $::text[]',
  chars: 'chars = $',
  picture: 'picture = $::jsonb',
  error: 'error = $',
};

/**
 * `SET …` of an UPDATE of attachments for the patch, its parameters numbered from `first`;
 * `updated_at` always moves.
 */
function patchSet(patch: ManifestPatch, first: number): { set: string; params: unknown[] } {
  const sets: string[] = [];
  const params: unknown[] = [];
  for (const [key, value] of Object.entries(patch) as [keyof ManifestPatch, unknown][]) {
    if (value === undefined) continue;
    const column = PATCH_COLUMNS[key];
    if (!column) throw new Error(`not a manifest field: ${key}`);
    sets.push(column.replace('$', `$${first + params.length}`));
    params.push(key === 'picture' && value !== null ? JSON.stringify(value) : value);
  }
  sets.push('updated_at = now()');
  return { set: sets.join(', '), params };
}

export interface PageHit {
  attachmentId: AttachmentId;
  page: number;
  rank: number;
  snippet: string;
}

export class AttachmentRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  private get attachments() {
    return this.em.getRepository(AttachmentEntity);
  }

  /**
   * A `pending` attachment under the caller's id; its original is already in the BlobStore.
   * Null when the conversation is not the user's.
   */
  async create(orgId: OrgId, input: NewAttachment): Promise<AttachmentManifest | null> {
    const conversationId = input.conversationId ?? null;
    if (conversationId !== null && !isUuid(conversationId)) return null;
    const { rows } = await runSql<AttachmentManifest>(
      this.em,
      `INSERT INTO attachments (id, org_id, user_id, conversation_id, kind, filename, mime_type, status, byte_size, sha256)
       SELECT $1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9
       WHERE $4::uuid IS NULL
         OR EXISTS (SELECT 1 FROM conversations c WHERE c.org_id = $2 AND c.user_id = $3 AND c.id = $4)
       RETURNING ${MANIFEST_COLUMNS}`,
      [
        input.id,
        orgId,
        input.userId,
        conversationId,
        input.kind,
        input.filename,
        input.mimeType,
        input.byteSize,
        input.sha256,
      ],
    );
    return rows[0] ?? null;
  }

  async getManifest(orgId: OrgId, attachmentId: AttachmentId): Promise<AttachmentManifest | null> {
    if (!isUuid(attachmentId)) return null;
    const { rows } = await runSql<AttachmentManifest>(
      this.em,
      `SELECT ${MANIFEST_COLUMNS} FROM attachments WHERE org_id = $1 AND id = $2`,
      [orgId, attachmentId],
    );
    return rows[0] ?? null;
  }

  /**
   * The manifest, where the attachment was uploaded and the model of that conversation's agent (the
   * model that will read a picture), in one query: what the ingest starts from.
   */
  async getForIngest(
    orgId: OrgId,
    attachmentId: AttachmentId,
  ): Promise<{
    manifest: AttachmentManifest;
    conversationId: ConversationId | null;
    model: string | null;
  } | null> {
    if (!isUuid(attachmentId)) return null;
    const { rows } = await runSql<
      AttachmentManifest & { conversationId: ConversationId | null; model: string | null }
    >(
      this.em,
      `SELECT ${MANIFEST_COLUMNS}, conversation_id AS "conversationId",
           (SELECT g.model FROM conversations c JOIN agents g ON g.org_id = c.org_id AND g.id = c.agent_id
            WHERE c.org_id = attachments.org_id AND c.id = attachments.conversation_id) AS model
         FROM attachments WHERE org_id = $1 AND id = $2`,
      [orgId, attachmentId],
    );
    if (!rows.length) return null;
    const { conversationId, model, ...manifest } = rows[0];
    return { manifest, conversationId, model };
  }

  /** The manifests found, in the order of the ids asked for; ids of other orgs are left out. */
  async getManifests(orgId: OrgId, attachmentIds: string[]): Promise<AttachmentManifest[]> {
    const rows = await this.attachments.findBy({ orgId, id: In(attachmentIds.filter(isUuid)) });
    const byId = new Map(rows.map((r) => [r.id, toAttachmentManifest(r)]));
    return attachmentIds.flatMap((id) => byId.get(id) ?? []);
  }

  /** Who uploaded each attachment and where: the gateway's scope check for a message's attachments. */
  async getScopes(
    orgId: OrgId,
    attachmentIds: string[],
  ): Promise<{ id: string; userId: UserId; conversationId: ConversationId | null }[]> {
    const rows = await this.attachments.find({
      select: { id: true, userId: true, conversationId: true },
      where: { orgId, id: In(attachmentIds.filter(isUuid)) },
    });
    // The entity's columns are plain strings: the ids are named here, where they leave the table.
    return rows.map((r) => ({
      id: r.id,
      userId: UserId(r.userId),
      conversationId: r.conversationId === null ? null : ConversationId(r.conversationId),
    }));
  }

  /** Applies the patch and answers the manifest as it now is, in one statement. */
  async update(
    orgId: OrgId,
    attachmentId: AttachmentId,
    patch: ManifestPatch,
  ): Promise<AttachmentManifest | null> {
    if (!isUuid(attachmentId)) return null;
    const { set, params } = patchSet(patch, 3);
    const { rows } = await runSql<AttachmentManifest>(
      this.em,
      `UPDATE attachments SET ${set} WHERE org_id = $1 AND id = $2 RETURNING ${MANIFEST_COLUMNS}`,
      [orgId, attachmentId, ...params],
    );
    return rows[0] ?? null;
  }

  /** Stores (or replaces) the text of one page, numbered from 1; the search index follows. */
  async savePage(orgId: OrgId, attachmentId: AttachmentId, page: number, text: string): Promise<void> {
    await runSql(
      this.em,
      `INSERT INTO attachment_pages (attachment_id, page, org_id, text)
       SELECT a.id, $3, a.org_id, $4 FROM attachments a WHERE a.org_id = $1 AND a.id = $2
       ON CONFLICT (attachment_id, page) DO UPDATE SET text = EXCLUDED.text`,
      [orgId, isUuid(attachmentId) ? attachmentId : null, page, text],
    );
  }

  /**
   * Stores (or replaces) a batch of pages and applies the patch (the reading progress) in one
   * statement; with `lastPage`, also removes the pages after it (a re-read that found fewer pages
   * leaves none behind). The search index follows each page. Null when the attachment is not the org's.
   */
  async savePages(
    orgId: OrgId,
    attachmentId: AttachmentId,
    pages: PageText[],
    patch: ManifestPatch = {},
    options: { lastPage?: number } = {},
  ): Promise<AttachmentManifest | null> {
    if (!isUuid(attachmentId)) return null;
    const { set, params } = patchSet(patch, 6);
    const { rows } = await runSql<AttachmentManifest>(
      this.em,
      `WITH target AS (
         SELECT id, org_id FROM attachments WHERE org_id = $1 AND id = $2
       ), saved AS (
         INSERT INTO attachment_pages (attachment_id, page, org_id, text)
         SELECT t.id, p.page, t.org_id, p.text FROM target t, unnest($3::int[], $4::text[]) AS p (page, text)
         ON CONFLICT (attachment_id, page) DO UPDATE SET text = EXCLUDED.text
       ), removed AS (
         DELETE FROM attachment_pages
         WHERE $5::int IS NOT NULL AND org_id = $1 AND attachment_id = $2 AND page > $5::int
       )
       UPDATE attachments SET ${set} WHERE org_id = $1 AND id = $2 RETURNING ${MANIFEST_COLUMNS}`,
      [
        orgId,
        attachmentId,
        pages.map((p) => p.page),
        pages.map((p) => p.text),
        options.lastPage ?? null,
        ...params,
      ],
    );
    return rows[0] ?? null;
  }

  async getPage(orgId: OrgId, attachmentId: AttachmentId, page: number): Promise<string | null> {
    if (!isUuid(attachmentId)) return null;
    const row = await this.em.getRepository(AttachmentPageEntity).findOneBy({ orgId, attachmentId, page });
    return row?.text ?? null;
  }

  /** The whole text of each attachment asked for, pages joined in order; ids without pages are left out. */
  async getTexts(orgId: OrgId, attachmentIds: string[]): Promise<Map<string, string>> {
    const ids = attachmentIds.filter(isUuid);
    if (!ids.length) return new Map();
    const { rows } = await runSql<{ id: string; text: string }>(
      this.em,
      `SELECT attachment_id AS id, string_agg(text, $3 ORDER BY page) AS text FROM attachment_pages
       WHERE org_id = $1 AND attachment_id = ANY($2::uuid[]) GROUP BY attachment_id`,
      [orgId, ids, PAGE_SEPARATOR],
    );
    return new Map(rows.map((r) => [r.id, r.text]));
  }

  /** Every page of a document, in order. */
  async getPages(orgId: OrgId, attachmentId: AttachmentId): Promise<{ page: number; text: string }[]> {
    if (!isUuid(attachmentId)) return [];
    const rows = await this.em
      .getRepository(AttachmentPageEntity)
      .find({ where: { orgId, attachmentId }, order: { page: 'ASC' } });
    return rows.map((r) => ({ page: r.page, text: r.text }));
  }

  /** Removes the pages after `lastPage`: a re-read that found fewer pages leaves none behind. */
  async deletePagesAfter(orgId: OrgId, attachmentId: AttachmentId, lastPage: number): Promise<void> {
    if (!isUuid(attachmentId)) return;
    await runSql(
      this.em,
      `DELETE FROM attachment_pages WHERE org_id = $1 AND attachment_id = $2 AND page > $3`,
      [orgId, attachmentId, lastPage],
    );
  }

  /**
   * The attachments of a conversation, oldest first: those uploaded to it and those its messages
   * carry. What the model's attachment tools may read.
   */
  async listForConversation(orgId: OrgId, conversationId: ConversationId): Promise<AttachmentManifest[]> {
    if (!isUuid(conversationId)) return [];
    const { rows } = await runSql<{ id: string }>(
      this.em,
      `SELECT a.id FROM attachments a
       WHERE a.org_id = $1 AND (
         a.conversation_id = $2
         OR a.id IN (SELECT unnest(m.attachment_ids) FROM messages m WHERE m.org_id = $1 AND m.conversation_id = $2))
       ORDER BY a.created_at, a.id`,
      [orgId, conversationId],
    );
    return this.getManifests(
      orgId,
      rows.map((r) => r.id),
    );
  }

  /** Full-text search (`simple` configuration) over the pages of the given attachments, best first. */
  async search(orgId: OrgId, attachmentIds: string[], query: string, limit = 10): Promise<PageHit[]> {
    const { rows } = await runSql<PageHit>(
      this.em,
      `SELECT p.attachment_id AS "attachmentId", p.page, ts_rank(p.tsv, q)::float8 AS rank,
         ts_headline('simple', p.text, q, 'MaxFragments=2, MinWords=8, MaxWords=30') AS snippet
       FROM attachment_pages p, websearch_to_tsquery('simple', $3) q
       WHERE p.org_id = $1 AND p.attachment_id = ANY($2::uuid[]) AND p.tsv @@ q
       ORDER BY rank DESC, p.attachment_id, p.page
       LIMIT $4`,
      [orgId, attachmentIds.filter(isUuid), query, limit],
    );
    return rows;
  }
}
