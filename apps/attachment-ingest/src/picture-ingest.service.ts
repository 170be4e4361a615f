import { Inject, Injectable } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@portal/dal';
import { INGEST_CONFIG, type AttachmentIngestConfig } from './config';
import type { IngestContext } from './ingest.types';
import { ImageRepository } from './media/image.repository';
import { UnreadableFileError } from './media/media.errors';
import { fitWithin, visionLimitsFor } from './picture-size.util';

/**
 * A picture: decoded with a pixel limit, oriented, stripped of metadata and reduced to the
 * limits of the model that will read it (see visionLimitsFor). The original stays as uploaded,
 * so a later re-reduction for another model is possible; the `reduced` blob is what models get,
 * in the original's format (a GIF's first frame as a GIF).
 */
@Injectable()
export class PictureIngestService {
  constructor(
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(ImageRepository) private readonly images: ImageRepository,
    @Inject(INGEST_CONFIG) private readonly config: Pick<AttachmentIngestConfig, 'catalogue' | 'limits'>,
  ) {}

  async read(ctx: IngestContext): Promise<void> {
    const { orgId, attachment } = ctx;
    const original = await ctx.original;
    if (!original) throw new UnreadableFileError('the uploaded file is missing');
    const limits = visionLimitsFor(this.config.catalogue, ctx.model);
    const pixels = { maxPixels: this.config.limits.maxPixels };
    const probe = await this.images.probe(original, pixels);
    const reduced = await this.images.render(
      original,
      pixels,
      fitWithin(probe.width, probe.height, limits),
      probe.format,
    );
    // The reduced copy first: the manifest never says `finished` before it is there.
    await this.blobs.put({ orgId, attachmentId: attachment.id, variant: 'reduced' }, reduced.data);
    await ctx.report({
      status: 'finished',
      error: null,
      picture: {
        width: reduced.width,
        height: reduced.height,
        originalWidth: probe.width,
        originalHeight: probe.height,
      },
    });
  }
}
