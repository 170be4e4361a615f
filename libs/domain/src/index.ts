export * from './block.types';
export * from './turn.types';
export * from './attachment.types';
