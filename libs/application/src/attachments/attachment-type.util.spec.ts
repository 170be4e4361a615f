import { decodeText, detectAttachmentType } from './attachment-type.util';

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]);
const gif = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1');
const webp = Buffer.concat([Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WEBPVP8 ')]);
const pdf = Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj', 'latin1');

describe('detectAttachmentType', () => {
  it.each([
    ['PNG', png, 'picture', 'image/png'],
    ['JPEG', jpeg, 'picture', 'image/jpeg'],
    ['GIF', gif, 'picture', 'image/gif'],
    ['WebP', webp, 'picture', 'image/webp'],
    ['PDF', pdf, 'document', 'application/pdf'],
  ])('knows %s by its magic number', (_name, bytes, kind, mimeType) => {
    expect(detectAttachmentType(bytes)).toEqual({ ok: true, kind, mimeType });
  });

  it('decides from the bytes only: a PNG whatever it is called is a picture', () => {
    // The function never sees the name or the client's type: there is nothing else to go by.
    expect(detectAttachmentType(png)).toMatchObject({ kind: 'picture', mimeType: 'image/png' });
    expect(detectAttachmentType(Buffer.from('%PDF is how a PDF starts, said the text file.'))).toMatchObject({
      kind: 'document',
      mimeType: 'text/plain',
    });
  });

  it('tells text apart by content: JSON, CSV, markdown, plain', () => {
    const kindOf = (text: string) => detectAttachmentType(Buffer.from(text));
    expect(kindOf('{"a": [1, 2]}\n')).toEqual({ ok: true, kind: 'document', mimeType: 'application/json' });
    expect(kindOf('[1, 2')).toMatchObject({ mimeType: 'text/plain' });
    expect(kindOf('name,city\nAn,Huế\nBình,Đà Nẵng\n')).toMatchObject({ mimeType: 'text/csv' });
    expect(kindOf('name,city\nAn\n')).toMatchObject({ mimeType: 'text/plain' });
    expect(kindOf('Intro\n\n# Dựng prompt\n\nText')).toMatchObject({ mimeType: 'text/markdown' });
    expect(kindOf('```js\nx\n```')).toMatchObject({ mimeType: 'text/markdown' });
    expect(kindOf('Mô hình đọc gì ở mỗi lần gọi.')).toMatchObject({ mimeType: 'text/plain' });
    expect(kindOf('\uFEFF{"bom": true}')).toMatchObject({ mimeType: 'application/json' });
  });

  it('refuses a text file with a NUL byte, and other binary files', () => {
    expect(detectAttachmentType(Buffer.from('hello\0world'))).toMatchObject({ ok: false });
    const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]);
    expect(detectAttachmentType(zip)).toEqual({
      ok: false,
      reason: expect.stringMatching(/^Unsupported file type/),
    });
    // A UTF-16 byte order mark followed by a lone surrogate is not text.
    expect(detectAttachmentType(Buffer.from([0xff, 0xfe, 0x00, 0xd8, 0x41, 0x00]))).toMatchObject({
      ok: false,
    });
  });

  it('reads UTF-8 and UTF-16 with its byte order mark; refuses a legacy 8-bit text, saying why', () => {
    const vi = 'Tiếng Việt\n# Tiêu đề';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(vi, 'utf16le')]);
    const be = Buffer.from(le.subarray(2)).swap16();
    const be16 = Buffer.concat([Buffer.from([0xfe, 0xff]), be]);
    for (const bytes of [
      Buffer.from(vi),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(vi)]),
      le,
      be16,
    ]) {
      expect(decodeText(bytes)).toBe(vi);
      expect(detectAttachmentType(bytes)).toEqual({ ok: true, kind: 'document', mimeType: 'text/markdown' });
    }
    for (const bytes of [Buffer.from('Café crème', 'latin1'), Buffer.from([0x56, 0x69, 0xea, 0xf2, 0x74])]) {
      expect(decodeText(bytes)).toBeNull();
      expect(detectAttachmentType(bytes)).toEqual({
        ok: false,
        reason: expect.stringMatching(
          /^Unsupported text encoding: .*UTF-8, or UTF-16 with a byte order mark/,
        ),
      });
    }
  });

  it('refuses an empty file', () => {
    expect(detectAttachmentType(Buffer.alloc(0))).toEqual({ ok: false, reason: 'The file is empty' });
  });

  it('does not take a partial signature for the real thing', () => {
    // Three bytes of a PNG signature are not a PNG, nor UTF-8 text.
    expect(detectAttachmentType(Buffer.from([0x89, 0x50, 0x4e]))).toMatchObject({ ok: false });
    expect(detectAttachmentType(Buffer.from('%PD'))).toMatchObject({ ok: true, kind: 'document' });
    // A RIFF file that is not WEBP (here WAVE audio) is refused.
    expect(detectAttachmentType(Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'))).toMatchObject({
      ok: false,
    });
  });
});
