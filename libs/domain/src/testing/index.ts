export * from './turn.builders';
export * from './turn.arbitrary';
