export * from './new-test-service';
export * from './records';
