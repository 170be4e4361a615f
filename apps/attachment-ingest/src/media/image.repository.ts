import sharp, { type Sharp } from 'sharp';
import { UnreadableFileError } from './media.errors';

export interface PictureProbe {
  format: string;
  /** As a person sees the picture: after EXIF orientation. */
  width: number;
  height: number;
}

export interface PictureLimits {
  maxPixels: number;
}

sharp.cache(false);

/**
 * libvips threads for each picture: the cores shared among the pictures read at once, at least
 * one. libvips' default, a thread per core for every picture, asks for more threads than there
 * are cores when two pictures are rendered together. (With one picture at a time on 2 cores, one
 * thread and two took the same time through the whole path in bench:ingest: the other core is
 * busy storing the upload.)
 */
export function threadsPerPicture(cores: number, picturesAtOnce: number): number {
  return Math.max(1, Math.floor(cores / Math.max(1, picturesAtOnce)));
}

/*
 * Why a picture failed, in words of our own: libvips keeps one error buffer for the whole process,
 * so under concurrency sharp's message for one picture can carry another's decoder errors (a PNG
 * failed with "VipsJpeg: Corrupt JPEG data" while a JPEG was read beside it). A reason must not
 * depend on what else was being read, nor show another upload's.
 */
const HEADER_UNREADABLE = 'the picture cannot be decoded: its header is not a valid picture';
const PIXELS_UNREADABLE = 'the picture cannot be decoded: its pixel data is corrupt or truncated';

/**
 * sharp behind a small class. Every decode has a pixel limit (checked from the header before any
 * pixel is decoded), fails on decoding errors, reads only the first frame of an animation and
 * applies EXIF orientation; output carries no metadata.
 */
export class ImageRepository {
  /** `threads`: libvips' for each picture (process-wide; see threadsPerPicture); 0 or none leaves its own. */
  constructor(options: { threads?: number } = {}) {
    if (options.threads) sharp.concurrency(options.threads);
  }

  async probe(input: Buffer, limits: PictureLimits): Promise<PictureProbe> {
    // The header only: the pixel limit is checked below, to say how large the picture is.
    const meta = await this.open(input, { maxPixels: 0 })
      .metadata()
      .catch(() => {
        throw new UnreadableFileError(HEADER_UNREADABLE);
      });
    if (!meta.format || !meta.width || !meta.height) throw new UnreadableFileError('the picture has no size');
    if (meta.width * meta.height > limits.maxPixels) {
      throw new UnreadableFileError(
        `the picture is ${meta.width}×${meta.height} pixels, more than the limit of ${limits.maxPixels} pixels`,
      );
    }
    return { format: meta.format, width: meta.autoOrient.width, height: meta.autoOrient.height };
  }

  /**
   * The picture oriented, resized to exactly `size` (oriented), re-encoded in its own format
   * without metadata. `format` is the probe's, when the header was read already.
   */
  async render(
    input: Buffer,
    limits: PictureLimits,
    size: { width: number; height: number },
    format?: string,
  ): Promise<{ data: Buffer; width: number; height: number }> {
    let image = this.open(input, limits).resize(size.width, size.height, { fit: 'fill' });
    format ??= (await image.metadata()).format;
    if (format === 'jpeg') image = image.jpeg({ quality: 85 });
    else if (format === 'png') image = image.png();
    else if (format === 'webp') image = image.webp({ quality: 85 });
    else if (format === 'gif') image = image.gif();
    else throw new UnreadableFileError(`unsupported picture format ${format}`);
    const { data, info } = await image.toBuffer({ resolveWithObject: true }).catch(() => {
      throw new UnreadableFileError(PIXELS_UNREADABLE);
    });
    return { data, width: info.width, height: info.height };
  }

  private open(input: Buffer, limits: PictureLimits): Sharp {
    return sharp(input, {
      limitInputPixels: limits.maxPixels || false,
      failOn: 'error',
      autoOrient: true,
      pages: 1,
      animated: false,
    });
  }
}
