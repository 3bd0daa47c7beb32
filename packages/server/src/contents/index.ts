export * from './manager';
export * from './router';
export * from './paths';
