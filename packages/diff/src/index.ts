/** Notebook diffs in nbdime's format. */
export {};
