import {
  documentManifest,
  joinParts,
  pictureManifest,
  planAttachments,
  segmentParts,
  type AttachmentForPrompt,
  type UserSegment,
} from './attachments';
import { resolveLimits } from './limits';
import { documentAttachment, limits, pictureAttachment } from './testing/transcript.fixtures';

const seg = (attachmentIds: string[], fresh = false, text = ''): UserSegment => ({
  text,
  attachmentIds,
  fresh,
});
const byId = (...list: AttachmentForPrompt[]) => Object.fromEntries(list.map((a) => [a.id, a]));

describe('documentManifest', () => {
  it('names filename and type, id, reading progress, unreadable pages and the first 20 headings', () => {
    const headings = Array.from({ length: 25 }, (_, i) => `Section ${i + 1}`);
    const a = documentAttachment('att_1', {
      filename: 'report.pdf',
      status: 'reading',
      pagesRead: 12,
      pageCount: 40,
      unreadablePages: [3, 7],
      headings,
    });
    expect(documentManifest(a, limits, false)).toBe(
      [
        '[Attachment att_1: report.pdf (application/pdf, document)]',
        'Reading progress: 12/40 pages read (reading)',
        'Unreadable pages: 3, 7',
        'Headings:',
        ...headings.slice(0, 20).map((h) => `- ${h}`),
      ].join('\n'),
    );
  });

  it.each<[string, Partial<AttachmentForPrompt>, boolean, string]>([
    [
      'pending',
      { status: 'pending', pagesRead: 0, pageCount: null },
      false,
      'Reading progress: 0/? pages read (pending)',
    ],
    [
      'failed',
      { status: 'failed', error: 'encrypted PDF' },
      false,
      'Reading progress: 2/2 pages read (failed: encrypted PDF)',
    ],
    [
      'inline',
      { text: 'Whole.' },
      true,
      'Reading progress: 2/2 pages read (finished)\nWhole text:\n"""\nWhole.\n"""',
    ],
    ['inline but not here', { text: 'Whole.' }, false, 'Text not repeated here: read it with read_document.'],
    [
      'too long',
      { chars: 9000 },
      false,
      'Text too long to include (9000 characters): read it with read_document or search it with search_attachments.',
    ],
  ])('%s', (_, over, withText, expected) => {
    expect(documentManifest(documentAttachment('att_1', over), limits, withText)).toContain(expected);
  });
});

describe('pictureManifest', () => {
  const photo = pictureAttachment('att_p', { filename: 'photo.jpg' });
  it.each<[Parameters<typeof pictureManifest>[1], AttachmentForPrompt, string]>([
    [
      'send',
      photo,
      '[Attachment att_p: photo.jpg (image/jpeg, picture)] — picture attached, reduced to 1024×768 (original 4032×3024)',
    ],
    [
      'send',
      pictureAttachment('att_s', {
        picture: { width: 300, height: 200, originalWidth: 300, originalHeight: 200 },
      }),
      '[Attachment att_s: att_s.jpg (image/jpeg, picture)] — picture attached, reduced to 300×200',
    ],
    [
      'gone',
      photo,
      '[Attachment att_p: photo.jpg (image/jpeg, picture)] — the picture is gone: it was sent with an earlier message and is no longer shown',
    ],
    [
      'unseen',
      photo,
      '[Attachment att_p: photo.jpg (image/jpeg, picture)] — picture not shown: this model cannot see pictures',
    ],
  ])('%s', (plan, a, expected) => {
    expect(pictureManifest(a, plan)).toBe(expected);
  });
});

describe('planAttachments', () => {
  const small = resolveLimits({ INLINE_DOC_CHARS: 10, INLINE_REPLAY_CHARS: 25 });
  const doc = (id: string, chars: number) => documentAttachment(id, { text: 'd'.repeat(chars), chars });

  it('inlines a finished document of at most INLINE_DOC_CHARS in a fresh message, whatever the budget', () => {
    const docs = byId(doc('a', 10), doc('b', 11), documentAttachment('c', { text: 'x', status: 'reading' }));
    const s = seg(['a', 'b', 'c'], true);
    expect([
      ...planAttachments(
        [s],
        docs,
        resolveLimits({ INLINE_DOC_CHARS: 10, INLINE_REPLAY_CHARS: 0 }),
        true,
      ).get(s)!.inline,
    ]).toEqual(['a']);
  });

  it('measures the text as sent in characters (code points): INLINE_DOC_CHARS emoji go whole', () => {
    const emoji = '😀'.repeat(limits.INLINE_DOC_CHARS); // twice as many UTF-16 units
    const viet = 'Vie\u0323\u0302t\n\n'.repeat(limits.INLINE_DOC_CHARS / 8); // pages joined, separators counted
    const over = `${viet}x`;
    const docs = byId(
      documentAttachment('emoji', { text: emoji, chars: limits.INLINE_DOC_CHARS }),
      documentAttachment('viet', { text: viet, chars: limits.INLINE_DOC_CHARS }),
      documentAttachment('over', { text: over, chars: limits.INLINE_DOC_CHARS + 1 }),
    );
    const s = seg(['emoji', 'viet', 'over'], true);
    const plan = planAttachments([s], docs, limits, true).get(s)!;
    expect([...plan.inline]).toEqual(['emoji', 'viet']);
    expect(documentManifest(docs['over'], limits, false)).toContain(
      `Text too long to include (${limits.INLINE_DOC_CHARS + 1} characters)`,
    );
  });

  it('charges the replay budget in characters (code points)', () => {
    const docs = byId(documentAttachment('e', { text: '😀'.repeat(10), chars: 10 }));
    const s = seg(['e']);
    expect([...planAttachments([s], docs, small, true).get(s)!.inline]).toEqual(['e']);
  });

  it('replays inline text within the shared budget, newest first, never in part', () => {
    const docs = byId(doc('d1', 10), doc('d2', 10), doc('d3', 10), doc('d4', 4));
    const segments = [seg(['d4']), seg(['d1']), seg(['d2']), seg(['d3'])];
    const plans = planAttachments(segments, docs, small, true);
    // d3 and d2 take 20 of 25; d1 (10) does not fit the 5 left; d4 (4) still does.
    expect(segments.map((s) => [...plans.get(s)!.inline])).toEqual([['d4'], [], ['d2'], ['d3']]);
  });

  it('does not charge the fresh message to the replay budget', () => {
    const docs = byId(doc('d1', 10), doc('d2', 10), doc('d3', 10), doc('new', 10));
    const segments = [seg(['d1']), seg(['d2']), seg(['d3']), seg(['new'], true)];
    const plans = planAttachments(
      segments,
      docs,
      resolveLimits({ INLINE_DOC_CHARS: 10, INLINE_REPLAY_CHARS: 20 }),
      true,
    );
    expect(segments.map((s) => plans.get(s)!.inline.size)).toEqual([0, 1, 1, 1]);
  });

  it('inlines a document once, with its newest message', () => {
    const docs = byId(doc('d', 5));
    const segments = [seg(['d']), seg(['d'])];
    const plans = planAttachments(segments, docs, small, true);
    expect(segments.map((s) => plans.get(s)!.inline.has('d'))).toEqual([false, true]);
  });

  it('resends the pictures of the PICTURE_MESSAGES most recent picture-bearing messages only', () => {
    const pics = byId(...['p1', 'p2', 'p3', 'p4'].map((id) => pictureAttachment(id)), doc('d', 1));
    const segments = [seg(['p1']), seg(['p2']), seg(['d']), seg(['p3']), seg(['p4'], true)];
    const plans = planAttachments(segments, pics, limits, true);
    expect(segments.map((s) => plans.get(s)!.pictures)).toEqual(['gone', 'send', 'unseen', 'send', 'send']);
  });

  it('sends no picture to a model that cannot see', () => {
    const s = seg(['p'], true);
    expect(planAttachments([s], byId(pictureAttachment('p')), limits, false).get(s)!.pictures).toBe('unseen');
  });
});

describe('segmentParts', () => {
  const photo = pictureAttachment('att_p');
  const attachments = byId(photo, documentAttachment('att_d', { text: 'Body.' }));

  it('puts the text, then each attachment in the order sent, with the picture as itself', () => {
    const parts = segmentParts(
      seg(['att_p', 'att_d', 'att_gone'], true, 'Look at these'),
      { pictures: 'send', inline: new Set(['att_d']) },
      attachments,
      limits,
    );
    expect(joinParts(parts)).toEqual([
      { type: 'text', text: `Look at these\n\n${pictureManifest(photo, 'send')}` },
      { type: 'image_url', image_url: { url: photo.imageUrl } },
      {
        type: 'text',
        text: `${documentManifest(attachments.att_d, limits, true)}\n\n[Attachment att_gone: no longer available]`,
      },
    ]);
  });

  it('says in words when the picture is gone, as plain text', () => {
    const parts = segmentParts(
      seg(['att_p'], false, 'Old'),
      { pictures: 'gone', inline: new Set() },
      attachments,
      limits,
    );
    expect(joinParts(parts)).toBe(`Old\n\n${pictureManifest(photo, 'gone')}`);
  });

  it('marks a message with nothing to read', () => {
    expect(
      joinParts(segmentParts(seg([], true, ''), { pictures: 'unseen', inline: new Set() }, {}, limits)),
    ).toBe('[no text]');
  });
});
