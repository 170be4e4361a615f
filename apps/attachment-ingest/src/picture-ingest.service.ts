import { Inject, Injectable } from '@nestjs/common';
import {
  BLOB_STORE,
  PictureCopies,
  PictureRenderError,
  visionLimitsFor,
  type BlobStore,
} from '@portal/application';
import { inSpan, SPAN } from '@portal/observability';
import { INGEST_CONFIG, type AttachmentIngestConfig } from './config';
import type { IngestContext } from './ingest.types';
import { ImageRepository } from './media/image.repository';
import { UnreadableFileError } from './media/media.errors';

/**
 * A picture: its header probed (format, size after EXIF orientation, pixel limit), then its copy
 * reduced to the limits of the model that will most likely read it (see visionLimitsFor) made
 * and stored, so the first turn finds it ready and a picture whose pixels cannot be decoded fails
 * here. A model with other limits gets its own copy from the original when it first reads it
 * (PictureCopies). The manifest's width and height are this copy's.
 */
@Injectable()
export class PictureIngestService {
  private readonly copies: PictureCopies;

  constructor(
    @Inject(BLOB_STORE) blobs: BlobStore,
    @Inject(ImageRepository) private readonly images: ImageRepository,
    @Inject(INGEST_CONFIG) private readonly config: Pick<AttachmentIngestConfig, 'catalogue' | 'limits'>,
  ) {
    this.copies = new PictureCopies(blobs);
  }

  async read(ctx: IngestContext): Promise<void> {
    const { orgId, attachment } = ctx;
    const original = await ctx.original;
    if (!original) throw new UnreadableFileError('the uploaded file is missing');
    const probe = await inSpan(SPAN.ingestProbe, {}, () =>
      this.images.probe(original, { maxPixels: this.config.limits.maxPixels }),
    );
    const sizes = { originalWidth: probe.width, originalHeight: probe.height };
    const limits = visionLimitsFor(this.config.catalogue, ctx.model);
    // The copy first: the manifest never says `finished` before it is there.
    const copy = await inSpan(SPAN.ingestCopy, { 'portal.picture.format': probe.format }, () =>
      this.copies.make({ orgId, attachmentId: attachment.id }, original, sizes, limits, probe.format),
    ).catch((err: unknown) => {
      throw err instanceof PictureRenderError ? new UnreadableFileError(err.message) : err;
    });
    await ctx.report({
      status: 'finished',
      error: null,
      picture: { width: copy.width, height: copy.height, ...sizes },
    });
  }
}
