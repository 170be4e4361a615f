export * from './catalogue';
export * from './stream-adapter';
export * from './model-client';
export {
  startLocalModelServer,
  type LocalModelServer,
  type LocalModelServerOptions,
} from './local-model.server';
export * from './openai-wire.util';
