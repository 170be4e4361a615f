import type { AttachmentManifest, ConversationId, OrgId } from '@portal/domain';
import type { AttachmentRepository } from '@portal/dal';

/** The model's attachment tools, over the attachments of one conversation only. */
export interface AttachmentToolScope {
  orgId: OrgId;
  conversationId: ConversationId;
}

/** What goes into the `tool_result` block: `error` when the call could not be answered. */
export interface AttachmentToolResult {
  outcome: 'ok' | 'error';
  content: string;
}

export interface ReadDocumentArgs {
  attachment_id: string;
  page?: number;
  offset?: number;
}

export interface SearchAttachmentsArgs {
  query: string;
  attachment_ids?: string[];
}

/** Characters one `read_document` call returns at most. */
export const READ_DOCUMENT_CHARS = 8000;
/** Pages one `search_attachments` call lists at most. */
export const SEARCH_RESULTS = 8;

export interface AttachmentToolOptions {
  readChars?: number;
  searchResults?: number;
}

const ok = (content: string): AttachmentToolResult => ({ outcome: 'ok', content });
const error = (content: string): AttachmentToolResult => ({ outcome: 'error', content });

/**
 * `read_document` and `search_attachments`: each takes the call's arguments as the model sent
 * them and returns the text of the tool result, which always says how to go on.
 */
export class AttachmentToolsService {
  private readonly readChars: number;
  private readonly searchResults: number;

  constructor(
    private readonly attachments: AttachmentRepository,
    options: AttachmentToolOptions = {},
  ) {
    this.readChars = options.readChars ?? READ_DOCUMENT_CHARS;
    this.searchResults = options.searchResults ?? SEARCH_RESULTS;
  }

  async readDocument(scope: AttachmentToolScope, args: ReadDocumentArgs): Promise<AttachmentToolResult> {
    const page = wholeNumber(args.page, 1);
    const offset = wholeNumber(args.offset, 0);
    if (page === null || page < 1) return error('`page` must be a whole number from 1.');
    if (offset === null) return error('`offset` must be a whole number from 0.');

    const all = await this.attachments.listForConversation(scope.orgId, scope.conversationId);
    const doc = all.find((a) => a.id === args.attachment_id);
    if (!doc) return error(`No attachment ${args.attachment_id} in this conversation. ${listing(all)}`);
    if (doc.kind !== 'document') {
      return error(
        `Attachment ${doc.id} (${doc.filename}) is a picture: it is shown in its message, not read.`,
      );
    }
    const name = `Document "${doc.filename}" (attachment ${doc.id})`;
    if (doc.pageCount !== null && page > doc.pageCount) {
      return error(
        `${name} has ${doc.pageCount} page${doc.pageCount === 1 ? '' : 's'}; there is no page ${page}.`,
      );
    }
    if (doc.unreadablePages.includes(page)) {
      return ok(
        `${name}, page ${page}: this page has no readable text (no text layer, or it failed to read).\n${next(doc, page)}`,
      );
    }
    const text = await this.attachments.getPage(scope.orgId, doc.id, page);
    if (text === null) {
      if (doc.status === 'failed')
        return error(`${name} could not be read: ${doc.error ?? 'unknown reason'}.`);
      return error(
        `${name}: page ${page} is not read yet (${doc.pagesRead} of ${doc.pageCount ?? '?'} pages read so far). ` +
          'Try again shortly, or read a page already read.',
      );
    }
    if (offset > 0 && offset >= text.length) {
      return error(`${name}, page ${page} has ${text.length} characters; offset ${offset} is past its end.`);
    }
    const end = safeEnd(text, Math.min(text.length, offset + this.readChars));
    const total = doc.pageCount ?? '?';
    const lines = [
      `${name}, page ${page} of ${total}, characters ${offset}–${end} of ${text.length}:`,
      text.slice(offset, end),
      '---',
    ];
    if (end < text.length) {
      lines.push(
        `More on this page: call read_document with ${JSON.stringify({ attachment_id: doc.id, page, offset: end })}.`,
      );
    } else {
      lines.push(next(doc, page));
    }
    return ok(lines.join('\n'));
  }

  async searchAttachments(
    scope: AttachmentToolScope,
    args: SearchAttachmentsArgs,
  ): Promise<AttachmentToolResult> {
    const query = (typeof args.query === 'string' ? args.query : '').normalize('NFC').trim();
    if (!query) return error('`query` must not be empty.');
    const all = await this.attachments.listForConversation(scope.orgId, scope.conversationId);
    let docs = all.filter((a) => a.kind === 'document');
    const notes: string[] = [];
    if (Array.isArray(args.attachment_ids) && args.attachment_ids.length) {
      const asked = new Set(args.attachment_ids);
      const missing = [...asked].filter((id) => !docs.some((d) => d.id === id));
      docs = docs.filter((d) => asked.has(d.id));
      if (missing.length) notes.push(`Not documents of this conversation, left out: ${missing.join(', ')}.`);
    }
    if (!docs.length) return error(`No documents to search. ${notes.join(' ')} ${listing(all)}`.trim());

    const ids = docs.map((d) => d.id);
    let hits = await this.attachments.search(scope.orgId, ids, query, this.searchResults);
    const words = query.split(/\s+/);
    if (!hits.length && words.length > 1) {
      // No page holds every word: any of them, still ranked by how many and how often.
      hits = await this.attachments.search(scope.orgId, ids, words.join(' or '), this.searchResults);
    }
    for (const d of docs) {
      if (d.status === 'pending' || d.status === 'reading') {
        notes.push(
          `"${d.filename}" (${d.id}) is still being read (${d.pagesRead}/${d.pageCount ?? '?'} pages): search again later for the rest.`,
        );
      } else if (d.status === 'failed') {
        notes.push(`"${d.filename}" (${d.id}) could not be read: ${d.error ?? 'unknown reason'}.`);
      }
    }
    const byId = new Map(docs.map((d) => [d.id, d]));
    const searched = `${docs.length} document${docs.length === 1 ? '' : 's'}`;
    const lines = hits.length
      ? [
          `Pages matching "${query}" in ${searched}, best first:`,
          ...hits.map(
            (h, i) =>
              `${i + 1}. "${byId.get(h.attachmentId)?.filename}" (attachment ${h.attachmentId}), page ${h.page}: ${snippet(h.snippet)}`,
          ),
          'Read a whole page with read_document (attachment_id, page).',
        ]
      : [`No page matches "${query}" in ${searched}.`];
    return ok([...lines, ...notes].join('\n'));
  }
}

function next(doc: AttachmentManifest, page: number): string {
  if (doc.pageCount !== null && page >= doc.pageCount) {
    return doc.status === 'finished'
      ? 'End of the document.'
      : `End of the pages read so far (${doc.status}).`;
  }
  return `Next page: call read_document with ${JSON.stringify({ attachment_id: doc.id, page: page + 1 })}.`;
}

function listing(all: AttachmentManifest[]): string {
  if (!all.length) return 'This conversation has no attachments.';
  return `Attachments here: ${all.map((a) => `${a.id} "${a.filename}" (${a.kind})`).join('; ')}.`;
}

/** Ends a slice between, never inside, a surrogate pair. */
function safeEnd(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return end < text.length && code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

function snippet(headline: string): string {
  return headline
    .replace(/<\/?b>/g, '**')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A whole number from a model's argument (which may come as a numeric string), or null. */
function wholeNumber(value: unknown, fallback: number): number | null {
  if (value === undefined || value === null) return fallback;
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : null;
}
