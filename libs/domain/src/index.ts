export * from './block.types';
export * from './turn.types';
