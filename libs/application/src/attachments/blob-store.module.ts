import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BLOB_STORE, blobStoreFor } from './blob-store';

/**
 * The BlobStore (`BLOB_STORE`, chosen by the environment variable of the same name), for the apps'
 * dependency injection. Global, like the DalModule whose DataSource it takes: import both.
 */
@Module({})
export class BlobStoreModule {
  /** `blobStore`: the BLOB_STORE setting, read by the app's config. */
  static forRoot(config: { blobStore: string }): DynamicModule {
    const blobStore: Provider = {
      provide: BLOB_STORE,
      useFactory: (ds: DataSource) => blobStoreFor(config.blobStore, ds),
      inject: [DataSource],
    };
    return {
      module: BlobStoreModule,
      global: true,
      providers: [blobStore],
      exports: [BLOB_STORE],
    };
  }
}
