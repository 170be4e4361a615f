import type { AttachmentId, OrgId } from '@portal/domain';
import type { ModelVision } from '@portal/model';
import type { Sharp, SharpOptions } from 'sharp';
import type { BlobVariant } from '@portal/dal';
import type { BlobStore } from './blob-store';

/**
 * A picture reduced for the model that reads it (SPEC 7): one copy per size limit (long side ×
 * short side), made from the original the first time it is asked for and kept in the blob store
 * under that limit's variant. Every copy is re-encoded in the original's format, oriented as a
 * person sees it, without EXIF or any other metadata.
 */

export interface PictureSize {
  width: number;
  height: number;
}

/** A picture's sizes after EXIF orientation, as the ingest probe measured them. */
export interface OriginalSize {
  originalWidth: number;
  originalHeight: number;
}

export interface PictureCopy extends PictureSize {
  data: Buffer;
}

/** Why a picture could not be rendered; ingest turns it into the attachment's failure reason. */
export class PictureRenderError extends Error {
  override name = 'PictureRenderError';
}

/** The size a picture of `width` × `height` is reduced to: never enlarged, proportions kept. */
export function fitWithin(width: number, height: number, limits: ModelVision): PictureSize {
  const long = Math.max(width, height);
  const short = Math.min(width, height);
  const scale = Math.min(1, limits.maxLongSide / long, limits.maxShortSide / short);
  if (scale === 1) return { width, height };
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** The blob variant of the copy for `limits`. */
export function reducedVariant(limits: ModelVision): BlobVariant {
  return `reduced-${limits.maxLongSide}x${limits.maxShortSide}`;
}

/**
 * How every picture is decoded: with a pixel limit (0: none), failing on decoding errors, the
 * first frame of an animation only, EXIF orientation applied.
 */
export function decodeOptions(maxPixels: number): SharpOptions {
  return {
    limitInputPixels: maxPixels || false,
    failOn: 'error',
    autoOrient: true,
    pages: 1,
    animated: false,
  };
}

// Loaded on the first render: the gateway and the workers that never render do not load libvips.
type SharpFactory = typeof import('sharp').default;
let sharpModule: Promise<SharpFactory> | undefined;
function loadSharp(): Promise<SharpFactory> {
  sharpModule ??= import('sharp').then(({ default: sharp }) => {
    sharp.cache(false);
    return sharp;
  });
  return sharpModule;
}

/*
 * libvips keeps one error buffer for the whole process, so under concurrency sharp's message for
 * one picture can carry another's decoder errors: the reason is ours, not sharp's.
 */
const PIXELS_UNREADABLE = 'the picture cannot be decoded: its pixel data is corrupt or truncated';

/** `input` oriented, resized to exactly `size`, re-encoded in `format` (or its own) without metadata. */
export async function renderPicture(
  input: Buffer,
  size: PictureSize,
  maxPixels: number,
  format?: string,
): Promise<Buffer> {
  const sharp = await loadSharp();
  let image: Sharp = sharp(input, decodeOptions(maxPixels)).resize(size.width, size.height, { fit: 'fill' });
  format ??= (await image.metadata().catch(() => ({ format: undefined }))).format;
  if (format === 'jpeg') image = image.jpeg({ quality: 85 });
  else if (format === 'png') image = image.png();
  else if (format === 'webp') image = image.webp({ quality: 85 });
  else if (format === 'gif') image = image.gif();
  else throw new PictureRenderError(`unsupported picture format ${format}`);
  return image.toBuffer().catch(() => {
    throw new PictureRenderError(PIXELS_UNREADABLE);
  });
}

/** The reduced copies of pictures, in the blob store next to their originals. */
export class PictureCopies {
  constructor(private readonly blobs: BlobStore) {}

  /**
   * The copy for `limits`, made from `original` and stored. The pixel limit is the size the probe
   * accepted, so a render never decodes more than ingest let through.
   */
  async make(
    key: { orgId: OrgId; attachmentId: AttachmentId },
    original: Buffer,
    picture: OriginalSize,
    limits: ModelVision,
    format?: string,
  ): Promise<PictureCopy> {
    const size = fitWithin(picture.originalWidth, picture.originalHeight, limits);
    const pixels = picture.originalWidth * picture.originalHeight;
    const data = await renderPicture(original, size, pixels, format);
    await this.blobs.put({ ...key, variant: reducedVariant(limits) }, data);
    return { data, ...size };
  }

  /**
   * The copy for `limits`: the stored one, else one made now from the original. Null when the
   * original is gone or cannot be rendered (the prompt then says the picture is not available).
   */
  async get(
    key: { orgId: OrgId; attachmentId: AttachmentId },
    picture: OriginalSize,
    limits: ModelVision,
  ): Promise<PictureCopy | null> {
    const stored = await this.blobs.get({ ...key, variant: reducedVariant(limits) });
    if (stored) return { data: stored, ...fitWithin(picture.originalWidth, picture.originalHeight, limits) };
    const original = await this.blobs.get({ ...key, variant: 'original' });
    if (!original) return null;
    return this.make(key, original, picture, limits).catch((err: unknown) => {
      if (err instanceof PictureRenderError) return null;
      throw err;
    });
  }
}
