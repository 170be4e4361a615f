export * from './conversation-events';
export * from './conversation-event-reader';
export * from './stream-id.util';
