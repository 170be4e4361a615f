export * from './graphemes';
export * from './playout';
