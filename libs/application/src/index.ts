export * from './attachments';
export * from './compaction';
export * from './prompt-input';
