/** The jupyter-store client: talk to the store API of a running server from code or a terminal. */
export * from './errors';
export * from './records';
export * from './discovery';
export * from './processTree';
export * from './connection';
export * from './session';
export * from './storeClient';
export * from './commands/commandLine';
export * from './commands/storeCommands';
