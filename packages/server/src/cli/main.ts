#!/usr/bin/env node
import { processIO } from '@jupyter-store/client';
import { runJupyterStore } from './program';

const io = {
  ...processIO(),
  // After an error, stop at once: the command may have started work that keeps the process up.
  exit: (status: number) => process.exit(status)
};
void runJupyterStore(process.argv.slice(2), { io }).then(status => {
  process.exitCode = status;
});
