export * from './compaction.repository';
