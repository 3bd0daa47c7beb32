export * from './manager';
export * from './routes';
export * from './paths';
