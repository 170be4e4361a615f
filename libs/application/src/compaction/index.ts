export * from './compaction-ids.util';
export * from './compaction-requests.service';
export * from './compaction-client.service';
