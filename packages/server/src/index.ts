export * from './app';
export * from './contents';
export * from './errors';
