/** Notebook diffs in nbdime's format: computing them, and applying them. */
export * from './types';
export { diffNotebooks, joinMultilineStrings } from './notebook';
export { patch } from './patch';
