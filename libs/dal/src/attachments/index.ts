export * from './attachment-type.util';
export * from './attachment-tools.service';
