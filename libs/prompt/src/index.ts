export * from './limits';
export * from './chat.types';
export * from './skills.util';
export * from './tools';
export * from './tokens';
export * from './attachments';
export * from './memory';
export * from './prompt-stack';
