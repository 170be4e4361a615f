export * from './chaos-infra.util';
export * from './chaos.scenario';
