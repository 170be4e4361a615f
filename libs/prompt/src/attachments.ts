import type { AttachmentManifest } from '@portal/domain';
import type { ChatContentPart } from './chat.types';
import type { Limits } from './limits';
import { charCount } from './text-cut';

/** SPEC section 7: attachments in the new message and on later turns. */

/** A manifest as the loader hands it to the prompt. */
export interface AttachmentForPrompt extends AttachmentManifest {
  /** The whole document text, when the loader had it and it has at most INLINE_DOC_CHARS characters. */
  text?: string;
  /** Data URL of the reduced picture. */
  imageUrl?: string;
}

export type AttachmentsById = Readonly<Record<string, AttachmentForPrompt>>;

/** The text of one user message as the model reads it, with the attachments sent with it. */
export interface UserSegment {
  text: string;
  attachmentIds: readonly string[];
  /** Sent with the new message or during the current turn; anything else is a replay. */
  fresh: boolean;
}

export interface SegmentPlan {
  /** `send`: the pictures go along; `gone`: older than PICTURE_MESSAGES; `unseen`: the model cannot see. */
  pictures: 'send' | 'gone' | 'unseen';
  /** Documents whose whole text goes along. */
  inline: ReadonlySet<string>;
}

/**
 * The one inline rule: a whole text of `chars` characters (code points of the text as sent, page
 * separators included; a manifest's `chars` is that count) goes into the message whole.
 */
export function fitsInline(chars: number, limits: Limits): boolean {
  return chars <= limits.INLINE_DOC_CHARS;
}

/** A document whose whole text may go into a message. */
export function isInlinable(
  a: AttachmentForPrompt,
  limits: Limits,
): a is AttachmentForPrompt & { text: string } {
  return (
    a.kind === 'document' &&
    a.status === 'finished' &&
    a.text !== undefined &&
    fitsInline(charCount(a.text), limits)
  );
}

/**
 * Decides, newest message first, which messages resend their pictures (the PICTURE_MESSAGES most
 * recent picture-bearing ones) and which documents go inline: always in a fresh message, within
 * the shared INLINE_REPLAY_CHARS budget on replay (a document that does not fit what is left goes
 * as its manifest only, never in part). A document goes inline once, with its newest message.
 */
export function planAttachments(
  segments: readonly UserSegment[],
  attachments: AttachmentsById,
  limits: Limits,
  canSee: boolean,
): Map<UserSegment, SegmentPlan> {
  const plans = new Map<UserSegment, SegmentPlan>();
  let pictureMessages = 0;
  let budget = limits.INLINE_REPLAY_CHARS;
  const inlined = new Set<string>();
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i];
    const found = segment.attachmentIds.flatMap((id) => (attachments[id] ? [attachments[id]] : []));
    const inline = new Set<string>();
    for (const a of found) {
      if (!isInlinable(a, limits) || inlined.has(a.id)) continue;
      if (!segment.fresh) {
        const size = charCount(a.text);
        if (size > budget) continue;
        budget -= size;
      }
      inline.add(a.id);
      inlined.add(a.id);
    }
    let pictures: SegmentPlan['pictures'] = 'unseen';
    if (found.some((a) => a.kind === 'picture')) {
      pictureMessages += 1;
      if (canSee) pictures = pictureMessages <= limits.PICTURE_MESSAGES ? 'send' : 'gone';
    }
    plans.set(segment, { pictures, inline });
  }
  return plans;
}

function heading(a: AttachmentForPrompt): string {
  return `[Attachment ${a.id}: ${a.filename} (${a.mimeType}, ${a.kind})]`;
}

function progressLine(a: AttachmentForPrompt): string {
  const status = a.status === 'failed' ? `failed: ${a.error ?? 'unknown reason'}` : a.status;
  return `Reading progress: ${a.pagesRead}/${a.pageCount ?? '?'} pages read (${status})`;
}

/**
 * A document's manifest entry: filename and type, attachment id, reading progress, unreadable
 * pages and the first HEADINGS headings, then its whole text or a word on where to find it.
 */
export function documentManifest(a: AttachmentForPrompt, limits: Limits, withText: boolean): string {
  const lines = [heading(a), progressLine(a)];
  if (a.unreadablePages.length > 0) lines.push(`Unreadable pages: ${a.unreadablePages.join(', ')}`);
  const headings = a.headings.slice(0, limits.HEADINGS);
  if (headings.length > 0) lines.push('Headings:', ...headings.map((h) => `- ${h}`));
  if (withText && a.text !== undefined) {
    lines.push('Whole text:', '"""', a.text, '"""');
  } else if (isInlinable(a, limits)) {
    lines.push('Text not repeated here: read it with read_document.');
  } else if (a.status === 'finished') {
    const size = a.chars === null ? '' : ` (${a.chars} characters)`;
    lines.push(
      `Text too long to include${size}: read it with read_document or search it with search_attachments.`,
    );
  }
  return lines.join('\n');
}

/** A picture's line: the reduced size when it goes along, else why it does not. */
export function pictureManifest(a: AttachmentForPrompt, plan: SegmentPlan['pictures']): string {
  const p = a.picture;
  const size = p ? `${p.width}×${p.height}` : 'unknown size';
  if (plan === 'unseen') return `${heading(a)} — picture not shown: this model cannot see pictures`;
  if (plan === 'gone')
    return `${heading(a)} — the picture is gone: it was sent with an earlier message and is no longer shown`;
  if (a.imageUrl === undefined || p === null)
    return `${heading(a)} — picture not available (${progressLine(a)})`;
  const original =
    p.originalWidth === p.width && p.originalHeight === p.height
      ? ''
      : ` (original ${p.originalWidth}×${p.originalHeight})`;
  return `${heading(a)} — picture attached, reduced to ${size}${original}`;
}

/** The content parts of one user message: its text, then each attachment in the order sent. */
export function segmentParts(
  segment: UserSegment,
  plan: SegmentPlan,
  attachments: AttachmentsById,
  limits: Limits,
): ChatContentPart[] {
  const parts: ChatContentPart[] = [];
  if (segment.text !== '') parts.push({ type: 'text', text: segment.text });
  for (const id of segment.attachmentIds) {
    const a = attachments[id];
    if (!a) {
      parts.push({ type: 'text', text: `[Attachment ${id}: no longer available]` });
    } else if (a.kind === 'document') {
      parts.push({ type: 'text', text: documentManifest(a, limits, plan.inline.has(id)) });
    } else {
      parts.push({ type: 'text', text: pictureManifest(a, plan.pictures) });
      if (plan.pictures === 'send' && a.imageUrl !== undefined && a.picture !== null) {
        parts.push({ type: 'image_url', image_url: { url: a.imageUrl } });
      }
    }
  }
  if (parts.length === 0) parts.push({ type: 'text', text: '[no text]' });
  return parts;
}

/** Adjacent text parts joined by a blank line; plain text when no picture is left. */
export function joinParts(parts: readonly ChatContentPart[]): string | ChatContentPart[] {
  const out: ChatContentPart[] = [];
  for (const part of parts) {
    const last = out.at(-1);
    if (part.type === 'text' && last?.type === 'text')
      out[out.length - 1] = { type: 'text', text: `${last.text}\n\n${part.text}` };
    else out.push(part);
  }
  return out.every((p) => p.type === 'text')
    ? out.map((p) => (p as { text: string }).text).join('\n\n')
    : out;
}
