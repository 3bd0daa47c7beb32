export * from './contents';
export * from './errors';
