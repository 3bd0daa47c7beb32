export * from './contents';
export * from './errors';
export * from './store';
export * from './publish';
export * from './clone';
export * from './diff';
export * from './endpoints';
