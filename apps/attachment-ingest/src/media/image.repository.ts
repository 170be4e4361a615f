import { decodeOptions } from '@portal/application';
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

/**
 * The ingest probe: a picture's format and size from its header, refused above the pixel limit
 * before any pixel is decoded. Rendering (decode options, reduced copies) is @portal/application's
 * PictureCopies, which the prompt loader also uses.
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

  private open(input: Buffer, limits: PictureLimits): Sharp {
    return sharp(input, decodeOptions(limits.maxPixels));
  }
}
