export * from './attachment-type.util';
export * from './attachment-tools.service';
export * from './blob-store';
export * from './blob-store.module';
export * from './picture-copies';
export * from './picture-size.util';
export * from './upload-handoff';
