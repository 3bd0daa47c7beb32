export * from './load';
export * from './storeSettings';
export * from './validate';
