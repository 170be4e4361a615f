export * from './portal-floor.util';
export * from './prompt-input.loader';
