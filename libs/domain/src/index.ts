export * from './block.types';
export * from './turn.types';
export * from './attachment.types';
export * from './domain-error';
export * from './turn-state';
export * from './invariants';
export * from './config-error';
export * from './ids';
