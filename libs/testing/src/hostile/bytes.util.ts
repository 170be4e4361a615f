import { constants as zlibConstants, deflateRawSync } from 'node:zlib';
/** Small byte helpers for the hostile-file generators: seeded randomness, CRC-32, big-endian ints. */

/** A seeded PRNG (mulberry32): the same seed gives the same corpus on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` seeded random bytes. */
export function randomBytesSeeded(n: number, seed: number): Buffer {
  const next = seededRandom(seed);
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** `count` bytes of `bytes` replaced by seeded random values (never the first `keep` bytes). */
export function flipBytes(bytes: Buffer, count: number, seed: number, keep = 8): Buffer {
  const next = seededRandom(seed);
  const out = Buffer.from(bytes);
  for (let i = 0; i < count; i++) {
    const at = keep + Math.floor(next() * (out.length - keep));
    out[at] = Math.floor(next() * 256);
  }
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (PNG, ZIP). */
export function crc32(...parts: Buffer[]): number {
  let c = 0xffffffff;
  for (const part of parts) for (const byte of part) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function u32be(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function u16be(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}

export function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

export function u16le(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n & 0xffff);
  return b;
}

/** A stored (uncompressed) ZIP archive holding `files`: enough for polyglots and "not a media file". */
export function zipArchive(files: { name: string; data: Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const file of files) {
    const name = Buffer.from(file.name, 'utf8');
    const crc = crc32(file.data);
    const local = Buffer.concat([
      u32le(0x04034b50),
      u16le(20),
      u16le(0),
      u16le(0),
      u16le(0),
      u16le(0),
      u32le(crc),
      u32le(file.data.length),
      u32le(file.data.length),
      u16le(name.length),
      u16le(0),
      name,
      file.data,
    ]);
    centrals.push(
      Buffer.concat([
        u32le(0x02014b50),
        u16le(20),
        u16le(20),
        u16le(0),
        u16le(0),
        u16le(0),
        u16le(0),
        u32le(crc),
        u32le(file.data.length),
        u32le(file.data.length),
        u16le(name.length),
        u16le(0),
        u16le(0),
        u16le(0),
        u16le(0),
        u32le(0),
        u32le(offset),
        name,
      ]),
    );
    locals.push(local);
    offset += local.length;
  }
  const central = Buffer.concat(centrals);
  const end = Buffer.concat([
    u32le(0x06054b50),
    u16le(0),
    u16le(0),
    u16le(files.length),
    u16le(files.length),
    u32le(central.length),
    u32le(offset),
    u16le(0),
  ]);
  return Buffer.concat([...locals, central, end]);
}

/** Adler-32 of `data`. */
export function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** Adler-32 of `x` followed by `y`, from theirs (zlib's adler32_combine). */
function adler32Combine(adler1: number, adler2: number, len2: number): number {
  const base = 65521;
  const rem = len2 % base;
  let sum1 = adler1 & 0xffff;
  let sum2 = (rem * sum1) % base;
  sum1 += (adler2 & 0xffff) + base - 1;
  sum2 += ((adler1 >>> 16) & 0xffff) + ((adler2 >>> 16) & 0xffff) + base - rem;
  if (sum1 >= base) sum1 -= base;
  if (sum1 >= base) sum1 -= base;
  if (sum2 >= base << 1) sum2 -= base << 1;
  if (sum2 >= base) sum2 -= base;
  return (sum1 | (sum2 << 16)) >>> 0;
}

/**
 * A zlib stream that inflates to `chunk` repeated `times` times, built in the time it takes to
 * deflate one chunk: the chunk is deflated once with a full flush (nothing refers back past it),
 * repeated, closed by an empty final block and the Adler-32 of the whole.
 */
export function deflateRepeated(chunk: Buffer, times: number): Buffer {
  const block = deflateRawSync(chunk, { level: 9, finishFlush: zlibConstants.Z_FULL_FLUSH });
  const one = adler32(chunk);
  let adler = 1;
  for (let i = 0; i < times; i++) adler = adler32Combine(adler, one, chunk.length);
  return Buffer.concat([
    Buffer.from([0x78, 0xda]),
    ...Array<Buffer>(times).fill(block),
    Buffer.from([0x03, 0x00]),
    u32be(adler),
  ]);
}
