/** The jupyter-store client: talk to the store API of a running server from code or a terminal. */
export {};
