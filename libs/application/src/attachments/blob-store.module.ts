import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { RedisConnections } from '@portal/redis';
import { DataSource } from 'typeorm';
import { BLOB_STORE, blobStoreFor } from './blob-store';
import { UploadHandOff } from './upload-handoff';

/**
 * The BlobStore (`BLOB_STORE`, chosen by the environment variable of the same name) and the upload
 * hand-off through Redis (`UploadHandOff`), for the apps' dependency injection. Global, like the
 * DalModule whose DataSource it takes and the RedisModule whose connections it takes: import them.
 */
@Module({})
export class BlobStoreModule {
  /** `blobStore`: the BLOB_STORE setting, read by the app's config; `prefix`: its PORTAL_PREFIX. */
  static forRoot(config: { blobStore: string; prefix: string }): DynamicModule {
    const blobStore: Provider = {
      provide: BLOB_STORE,
      useFactory: (ds: DataSource) => blobStoreFor(config.blobStore, ds),
      inject: [DataSource],
    };
    const handOff: Provider = {
      provide: UploadHandOff,
      useFactory: (redis: RedisConnections) => new UploadHandOff(redis, config.prefix),
      inject: [RedisConnections],
    };
    return {
      module: BlobStoreModule,
      global: true,
      providers: [blobStore, handOff],
      exports: [BLOB_STORE, UploadHandOff],
    };
  }
}
