#!/usr/bin/env node
import { isStoreCommand, runStoreCommand } from '@jupyter-store/client';
import { packageVersion } from '../version';
import { UsageError } from './flags';
import { runDisable, runEnable } from './enableCommands';

const USAGE = `Usage: jupyter-store <command> [options]    (or: jupyter store <command> …)

Commands:
  lab        start JupyterLab behind the jupyter-store gateway
  serve      put the gateway in front of a Jupyter Server that is already running
  enable     enable publishing: --user (everywhere) or --sys-prefix (this environment)
  disable    take back 'enable' for --user or --sys-prefix

From a notebook's kernel (!jupyter store …), a terminal or a script, against a running server:
  clone      clone s3://BUCKET/KEY[?versionId=ID] [TARGET]: copy an object into the server
  fs-clone   fs-clone RELPATH [TARGET]: copy a file from the server's fs_cloning_basedir
  publish    publish [PATH]: publish a notebook (default: the current one)
  versions   versions [PATH]: list a notebook's archived and published versions
  diff       diff PATH [BASE] [REMOTE]: what changed in a notebook between two versions
  servers    list the running Jupyter servers

Run 'jupyter-store <command> --help' for a command's options.
  -h, --help      show this help
  --version       show the version
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (isStoreCommand(command)) {
    // These handle their own errors: exit status 1 with the server's message (2 for diff, whose
    // 1 means the notebooks differ), 2 on bad usage.
    process.exitCode = await runStoreCommand(command, rest);
    return;
  }
  switch (command) {
    case undefined:
    case '-h':
    case '--help':
      process.stdout.write(USAGE);
      return;
    case '--version':
      process.stdout.write(`${packageVersion()}\n`);
      return;
    // Loaded on demand, so that the client commands above start without the server's code.
    case 'lab':
      return (await import('./gatewayCommands.js')).runLab(rest);
    case 'serve':
      return (await import('./gatewayCommands.js')).runServe(rest);
    case 'enable':
      return runEnable(rest);
    case 'disable':
      return runDisable(rest);
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    // One line naming the flag, and exit status 2, for every way of calling a command wrongly.
    process.stderr.write(`jupyter-store: ${error.message} (see --help)\n`);
    process.exit(2);
  }
  process.stderr.write(`jupyter-store: ${(error as Error).message}\n`);
  process.exit(1);
});
