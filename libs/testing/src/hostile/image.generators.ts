import { deflateSync } from 'node:zlib';
import {
  crc32,
  deflateRepeated,
  flipBytes,
  randomBytesSeeded,
  u16be,
  u32be,
  u32le,
  zipArchive,
} from './bytes.util';
import type { HostileFile } from './hostile.types';
import { basePdf } from './pdf.generators';

/** What a picture that the reader refuses fails with (apps/attachment-ingest media/image.repository.ts). */
export const PICTURE_REASON =
  /^(the picture (cannot be decoded: (its header is not a valid picture|its pixel data is corrupt or truncated)$|has no size|is \d+×\d+ pixels, more than the limit)|unsupported picture format)/;

// Small valid pictures (8 × 8, made once with sharp) that the generators damage.
const JPEG_8X8 = Buffer.from(
  '/9j/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAIAAgDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAX/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFQEBAQAAAAAAAAAAAAAAAAAABAb/xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oADAMBAAIRAxEAPwCOACqH/9k=',
  'base64',
);
const WEBP_LOSSLESS_8X8 = Buffer.from('UklGRh4AAABXRUJQVlA4TBEAAAAvB8ABAAdQjyLXo/+BiOh/AAA=', 'base64');
const WEBP_LOSSY_8X8 = Buffer.from(
  'UklGRjYAAABXRUJQVlA4ICoAAACQAQCdASoIAAgAAsBMJaACdLoAA5gA/u2QP4hd7G2//PTP62/j/xkAAAA=',
  'base64',
);
/** 1 × 1, two-colour global table. */
const GIF_1X1 = Buffer.from(
  '47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b',
  'hex',
);

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function pngChunk(type: string, data: Buffer, options: { badCrc?: boolean } = {}): Buffer {
  const t = Buffer.from(type, 'latin1');
  const crc = crc32(t, data) ^ (options.badCrc ? 0xdeadbeef : 0);
  return Buffer.concat([u32be(data.length), t, data, u32be(crc)]);
}

function ihdr(width: number, height: number, bitDepth = 8, colorType = 0, interlace = 0): Buffer {
  return Buffer.concat([u32be(width), u32be(height), Buffer.from([bitDepth, colorType, 0, 0, interlace])]);
}

/** A PNG: signature, IHDR, then `chunks` as given (IDAT, IEND… or not). */
function png(header: Buffer, chunks: Buffer[], options: { badHeaderCrc?: boolean } = {}): Buffer {
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', header, { badCrc: options.badHeaderCrc }),
    ...chunks,
  ]);
}

const iend = () => pngChunk('IEND', Buffer.alloc(0));

/** Rows of zeros (filter byte 0 then the row) deflated: a few kB standing for `width × height` pixels. */
function zeroRows(width: number, height: number, channels: number): Buffer {
  const row = width * channels + 1;
  const rowsPerChunk = Math.max(1, Math.min(height, Math.floor((1024 * 1024) / row)));
  if (height % rowsPerChunk !== 0) return deflateSync(Buffer.alloc(row * height), { level: 9 });
  return deflateRepeated(Buffer.alloc(row * rowsPerChunk), height / rowsPerChunk);
}

/** A valid grey PNG of `width × height`, every pixel `value`. */
export function greyPng(width: number, height: number, value = 128): Buffer {
  const raw = Buffer.alloc((width + 1) * height, value);
  for (let y = 0; y < height; y++) raw[y * (width + 1)] = 0;
  return png(ihdr(width, height), [pngChunk('IDAT', deflateSync(raw)), iend()]);
}

/** The base JPEG with its frame header's size changed. */
function jpegWithSize(width: number, height: number, marker = 0xc0): Buffer {
  const out = Buffer.from(JPEG_8X8);
  const at = out.indexOf(Buffer.from([0xff, 0xc0]));
  out[at + 1] = marker;
  out.writeUInt16BE(height, at + 5);
  out.writeUInt16BE(width, at + 7);
  return out;
}

/** An APP1 Exif segment whose first IFD links to itself, or claims 65,535 entries it does not hold. */
function exifSegment(shape: 'loop' | 'huge-count'): Buffer {
  const tiff =
    shape === 'loop'
      ? Buffer.concat([
          Buffer.from('MM\x00\x2a', 'latin1'),
          u32be(8),
          u16be(1),
          Buffer.concat([u16be(0x0112), u16be(3), u32be(1), u16be(6), u16be(0)]), // orientation 6
          u32be(8), // next IFD: this one again
        ])
      : Buffer.concat([Buffer.from('MM\x00\x2a', 'latin1'), u32be(8), u16be(0xffff), Buffer.alloc(16)]);
  const body = Buffer.concat([Buffer.from('Exif\x00\x00', 'latin1'), tiff]);
  return Buffer.concat([Buffer.from([0xff, 0xe1]), u16be(body.length + 2), body]);
}

function jpegWithSegment(segment: Buffer): Buffer {
  return Buffer.concat([JPEG_8X8.subarray(0, 2), segment, JPEG_8X8.subarray(2)]);
}

/**
 * A progressive JPEG of `width × height` whose scan is repeated `scans` times: each scan walks the
 * whole picture, the known CPU bomb of progressive decoders.
 */
function progressiveScanBomb(width: number, height: number, scans: number): Buffer {
  const base = jpegWithSize(width, height, 0xc2);
  const sos = base.indexOf(Buffer.from([0xff, 0xda]));
  const eoi = base.lastIndexOf(Buffer.from([0xff, 0xd9]));
  // A DC-first scan of component 1 with a few bytes of entropy data, again and again.
  const scan = Buffer.concat([
    Buffer.from([0xff, 0xda]),
    u16be(8),
    Buffer.from([1, 1, 0x00, 0, 0, 0x00]),
    Buffer.alloc(4, 0),
  ]);
  return Buffer.concat([base.subarray(0, sos), Buffer.concat(Array(scans).fill(scan)), base.subarray(eoi)]);
}

function gifWithSizes(screen: [number, number], frame: [number, number]): Buffer {
  const out = Buffer.from(GIF_1X1);
  out.writeUInt16LE(screen[0], 6);
  out.writeUInt16LE(screen[1], 8);
  const descriptor = out.indexOf(0x2c, 13);
  out.writeUInt16LE(frame[0], descriptor + 5);
  out.writeUInt16LE(frame[1], descriptor + 7);
  return out;
}

/** A GIF of `frames` 1 × 1 frames (a picture reader reads the first only). */
function gifFrames(frames: number): Buffer {
  const head = GIF_1X1.subarray(0, 13 + 6);
  const frame = GIF_1X1.subarray(13 + 6, GIF_1X1.length - 1);
  return Buffer.concat([head, Buffer.concat(Array(frames).fill(frame)), Buffer.from([0x3b])]);
}

/** The lossless WebP with its VP8L header claiming `width × height` (at most 16384 each). */
function webpLosslessWithSize(width: number, height: number): Buffer {
  const out = Buffer.from(WEBP_LOSSLESS_8X8);
  // After 'VP8L' and its size: the 0x2f signature, then 14 bits width - 1, 14 bits height - 1, …
  const at = out.indexOf(Buffer.from('VP8L', 'latin1')) + 8 + 1;
  const bits = out.readUInt32LE(at);
  const rest = bits & ~0x0fffffff;
  out.writeUInt32LE((rest | ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14)) >>> 0, at);
  return out;
}

/** An extended WebP whose VP8X canvas claims `width × height` (up to 2^24 each) over the 8 × 8 image. */
function webpCanvas(width: number, height: number): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x.writeUIntLE(width - 1, 4, 3);
  vp8x.writeUIntLE(height - 1, 7, 3);
  const inner = WEBP_LOSSLESS_8X8.subarray(12);
  const body = Buffer.concat([
    Buffer.from('WEBP', 'latin1'),
    Buffer.from('VP8X', 'latin1'),
    u32le(10),
    vp8x,
    inner,
  ]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), u32le(body.length), body]);
}

const picture = (
  category: HostileFile['category'],
  variant: string,
  ext: string,
  bytes: Buffer,
  expect: HostileFile['expect'],
  note: string,
  extra: Partial<HostileFile> = {},
): HostileFile => ({
  name: `${category}/${variant}`,
  category,
  filename: `${variant}.${ext}`,
  bytes,
  expect,
  kind: 'picture',
  ...(expect === 'failed' && { reason: PICTURE_REASON }),
  note,
  ...extra,
});

const OVER_LIMIT = /more than the limit/;

/** Every picture of the corpus. */
export function hostilePictures(seed: number): HostileFile[] {
  const valid = greyPng(8, 8);
  const files: HostileFile[] = [
    picture('control', 'valid-png', 'png', valid, 'finished', 'a valid 8 × 8 PNG'),
    picture('control', 'valid-jpeg', 'jpg', JPEG_8X8, 'finished', 'a valid 8 × 8 JPEG'),
    picture('control', 'valid-webp', 'webp', WEBP_LOSSY_8X8, 'finished', 'a valid 8 × 8 WebP'),
    picture('control', 'valid-gif', 'gif', GIF_1X1, 'finished', 'a valid 1 × 1 GIF'),
  ];

  const bomb = (
    variant: string,
    ext: string,
    bytes: Buffer,
    expect: HostileFile['expect'],
    note: string,
    extra: Partial<HostileFile> = {},
  ) => picture('image-bomb', variant, ext, bytes, expect, note, extra);
  files.push(
    bomb(
      'png-header-100000x100000',
      'png',
      png(ihdr(100_000, 100_000), [pngChunk('IDAT', zeroRows(16, 16, 1)), iend()]),
      'failed',
      'a PNG header claiming 10^10 pixels',
      { reason: OVER_LIMIT },
    ),
    bomb(
      'png-header-2147483647x1',
      'png',
      png(ihdr(0x7fffffff, 1), [pngChunk('IDAT', zeroRows(16, 1, 1)), iend()]),
      'failed',
      'a PNG 2^31 - 1 pixels wide',
    ),
    bomb(
      'png-header-65535x65535-rgba16',
      'png',
      png(ihdr(65_535, 65_535, 16, 6), [pngChunk('IDAT', zeroRows(8, 8, 8)), iend()]),
      'failed',
      'a 16-bit RGBA PNG of 65,535²',
      { reason: OVER_LIMIT },
    ),
    bomb(
      'png-idat-bomb-8000x8000',
      'png',
      png(ihdr(8000, 8000), [pngChunk('IDAT', zeroRows(8000, 8000, 1)), iend()]),
      'failed',
      'a complete 8000 × 8000 PNG in ~60 kB of IDAT (over the pixel limit)',
      { reason: OVER_LIMIT },
    ),
    bomb(
      'png-idat-bomb-7000x7000',
      'png',
      png(ihdr(7000, 7000), [pngChunk('IDAT', zeroRows(7000, 7000, 1)), iend()]),
      'finished',
      'a complete 7000 × 7000 PNG in ~48 kB of IDAT (just under the pixel limit: decoded)',
    ),
    bomb(
      'png-idat-bomb-interlaced-6000x6000-rgb',
      'png',
      png(ihdr(6000, 6000, 8, 2, 1), [pngChunk('IDAT', zeroRows(6000, 6000, 3)), iend()]),
      'settled',
      'an Adam7-interlaced 6000 × 6000 RGB PNG of zeros',
    ),
    bomb(
      'png-ztxt-bomb',
      'png',
      png(ihdr(8, 8), [
        pngChunk(
          'zTXt',
          Buffer.concat([
            Buffer.from('Comment\x00\x00', 'latin1'),
            deflateRepeated(Buffer.alloc(1024 * 1024, 0x41), 64),
          ]),
        ),
        pngChunk('IDAT', zeroRows(8, 8, 1)),
        iend(),
      ]),
      'settled',
      'a zTXt chunk inflating to 64 MB',
    ),
    bomb(
      'png-iccp-bomb',
      'png',
      png(ihdr(8, 8), [
        pngChunk(
          'iCCP',
          Buffer.concat([
            Buffer.from('icc\x00\x00', 'latin1'),
            deflateRepeated(Buffer.alloc(1024 * 1024), 64),
          ]),
        ),
        pngChunk('IDAT', zeroRows(8, 8, 1)),
        iend(),
      ]),
      'settled',
      'an ICC profile inflating to 64 MB',
    ),
    bomb(
      'png-100k-chunks',
      'png',
      png(ihdr(8, 8), [
        Buffer.concat(Array(100_000).fill(pngChunk('hsTl', Buffer.from('x')))),
        pngChunk('IDAT', zeroRows(8, 8, 1)),
        iend(),
      ]),
      'settled',
      '100,000 unknown ancillary chunks',
    ),
    bomb(
      'jpeg-sof-65500x65500',
      'jpg',
      jpegWithSize(65_500, 65_500),
      'failed',
      'a JPEG frame header claiming 65,500²',
      { reason: OVER_LIMIT },
    ),
    bomb(
      'jpeg-progressive-scan-bomb',
      'jpg',
      progressiveScanBomb(4000, 4000, 5000),
      'settled',
      'a 4000 × 4000 progressive JPEG with 5,000 scans',
    ),
    bomb(
      'gif-screen-65535x65535',
      'gif',
      gifWithSizes([65_535, 65_535], [1, 1]),
      'settled',
      'a GIF whose logical screen is 65,535²',
    ),
    bomb(
      'gif-frame-65535x65535',
      'gif',
      gifWithSizes([1, 1], [65_535, 65_535]),
      'settled',
      'a GIF frame of 65,535² in 4 bytes of data',
    ),
    bomb('gif-20000-frames', 'gif', gifFrames(20_000), 'settled', 'a GIF of 20,000 frames'),
    bomb(
      'webp-vp8l-16384x16384',
      'webp',
      webpLosslessWithSize(16_384, 16_384),
      'failed',
      'a lossless WebP header claiming 16,384²',
    ),
    bomb(
      'webp-vp8x-canvas-16777216',
      'webp',
      webpCanvas(16_777_216, 16_777_216),
      'failed',
      'an extended WebP canvas of 2^24²',
    ),
  );

  const bad = (variant: string, ext: string, bytes: Buffer, expect: HostileFile['expect'], note: string) =>
    picture('image-malformed', variant, ext, bytes, expect, note);
  files.push(
    bad(
      'png-zero-size',
      'png',
      png(ihdr(0, 0), [pngChunk('IDAT', zeroRows(1, 1, 1)), iend()]),
      'failed',
      'a PNG of 0 × 0',
    ),
    bad(
      'png-bad-ihdr-crc',
      'png',
      png(ihdr(8, 8), [pngChunk('IDAT', zeroRows(8, 8, 1)), iend()], { badHeaderCrc: true }),
      'settled',
      'an IHDR whose CRC is wrong',
    ),
    bad(
      'png-bad-idat-crc',
      'png',
      png(ihdr(8, 8), [pngChunk('IDAT', zeroRows(8, 8, 1), { badCrc: true }), iend()]),
      'settled',
      'an IDAT whose CRC is wrong',
    ),
    bad('png-signature-only', 'png', PNG_SIGNATURE, 'failed', 'eight bytes of PNG signature'),
    bad(
      'png-truncated-idat',
      'png',
      valid.subarray(0, valid.length - 20),
      'settled',
      'a PNG cut inside its IDAT',
    ),
    bad(
      'png-no-iend',
      'png',
      png(ihdr(8, 8), [pngChunk('IDAT', zeroRows(8, 8, 1))]),
      'settled',
      'a PNG without IEND',
    ),
    bad(
      'png-idat-garbage',
      'png',
      png(ihdr(8, 8), [pngChunk('IDAT', randomBytesSeeded(200, seed)), iend()]),
      'failed',
      'an IDAT of random bytes',
    ),
    bad(
      'png-palette-without-plte',
      'png',
      png(ihdr(8, 8, 8, 3), [pngChunk('IDAT', zeroRows(8, 8, 1)), iend()]),
      'settled',
      'a palette PNG without a palette',
    ),
    bad(
      'png-bitflips',
      'png',
      flipBytes(valid, 12, seed + 40),
      'settled',
      '12 random bytes of a valid PNG changed',
    ),
    bad('jpeg-zero-size', 'jpg', jpegWithSize(0, 0), 'failed', 'a JPEG of 0 × 0'),
    bad(
      'jpeg-soi-only',
      'jpg',
      Buffer.from([0xff, 0xd8, 0xff]),
      'failed',
      'a JPEG start marker and nothing else',
    ),
    bad(
      'jpeg-truncated-after-sof',
      'jpg',
      JPEG_8X8.subarray(0, JPEG_8X8.indexOf(Buffer.from([0xff, 0xc4]))),
      'settled',
      'a JPEG cut after its frame header',
    ),
    bad(
      'jpeg-scan-garbage',
      'jpg',
      Buffer.concat([
        JPEG_8X8.subarray(0, JPEG_8X8.length - 6),
        randomBytesSeeded(3000, seed + 41),
        Buffer.from([0xff, 0xd9]),
      ]),
      'settled',
      'a JPEG whose entropy-coded data is random',
    ),
    bad(
      'jpeg-exif-ifd-loop',
      'jpg',
      jpegWithSegment(exifSegment('loop')),
      'settled',
      'an EXIF IFD that links to itself (orientation 6)',
    ),
    bad(
      'jpeg-exif-huge-count',
      'jpg',
      jpegWithSegment(exifSegment('huge-count')),
      'settled',
      'an EXIF IFD claiming 65,535 entries',
    ),
    bad('gif-truncated', 'gif', GIF_1X1.subarray(0, 20), 'settled', 'a GIF cut after its colour table'),
    bad(
      'gif-lzw-garbage',
      'gif',
      Buffer.concat([
        GIF_1X1.subarray(0, GIF_1X1.length - 6),
        Buffer.from([0x02, 0xff]),
        randomBytesSeeded(255, seed + 42),
        Buffer.from([0x00, 0x3b]),
      ]),
      'settled',
      'a GIF whose LZW data is random',
    ),
    bad(
      'webp-riff-size-lies',
      'webp',
      (() => {
        const out = Buffer.from(WEBP_LOSSY_8X8);
        out.writeUInt32LE(0xfffffff0, 4);
        return out;
      })(),
      'settled',
      'a RIFF size of 4 GB',
    ),
    bad('webp-truncated', 'webp', WEBP_LOSSY_8X8.subarray(0, 30), 'failed', 'a WebP cut in its frame'),
    bad(
      'webp-vp8-garbage',
      'webp',
      Buffer.concat([WEBP_LOSSY_8X8.subarray(0, 20), randomBytesSeeded(42, seed + 43)]),
      'settled',
      'a WebP whose VP8 data is random',
    ),
  );

  files.push(
    picture(
      'polyglot',
      'png-then-pdf',
      'png',
      Buffer.concat([valid, basePdf()]),
      'settled',
      'a valid PNG with a whole PDF appended',
    ),
    picture(
      'polyglot',
      'gif-then-zip',
      'gif',
      Buffer.concat([GIF_1X1, zipArchive([{ name: 'Main.class', data: Buffer.from('cafebabe', 'hex') }])]),
      'settled',
      'a GIF with a JAR appended (GIFAR)',
    ),
    picture(
      'polyglot',
      'jpeg-html-comment',
      'jpg',
      Buffer.concat([
        JPEG_8X8.subarray(0, 2),
        Buffer.from([0xff, 0xfe]),
        u16be(2 + 60),
        Buffer.from('<html><script>alert(document.cookie)</script></html>'.padEnd(60), 'latin1'),
        JPEG_8X8.subarray(2),
      ]),
      'finished',
      'a JPEG with HTML and a script in a comment segment',
    ),
  );
  return files;
}

/** The valid JPEG, under its own name: for "wrong extension" files. */
export const VALID_JPEG = JPEG_8X8;
