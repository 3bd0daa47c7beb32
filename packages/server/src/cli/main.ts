#!/usr/bin/env node
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isStoreCommand, runStoreCommand } from '@jupyter-store/client';
import type { ContentsManager } from '../contents/manager';
import { packageVersion } from '../version';
import { describeFlags, parseFlags, UsageError, type FlagSpec } from './flags';
import { runDisable, runEnable } from './enableCommands';

const USAGE = `Usage: jupyter-store <command> [options]    (or: jupyter store <command> …)

Commands:
  lab        start JupyterLab behind the jupyter-store gateway
  serve      put the gateway in front of a Jupyter Server that is already running
  contents   serve only the contents API over a directory, on loopback, without auth
  enable     enable publishing: --user (everywhere) or --sys-prefix (this environment)
  disable    take back 'enable' for --user or --sys-prefix

From a notebook's kernel (!jupyter store …), a terminal or a script, against a running server:
  clone      clone s3://BUCKET/KEY[?versionId=ID] [TARGET]: copy an object into the server
  fs-clone   fs-clone RELPATH [TARGET]: copy a file from the server's fs_cloning_basedir
  publish    publish [PATH]: publish a notebook (default: the current one)
  versions   versions [PATH]: list a notebook's archived and published versions
  servers    list the running Jupyter servers

Run 'jupyter-store <command> --help' for a command's options.
  -h, --help      show this help
  --version       show the version
`;

const CONTENTS_FLAGS = {
  'root-dir': {
    type: 'string',
    help: 'directory to serve (default: a new temporary directory)',
    value: 'DIR'
  },
  port: {
    type: 'string',
    help: 'port to listen on (default: 8888; 0 picks a free one)',
    value: 'N'
  },
  ip: { type: 'string', help: 'loopback address to bind (default: 127.0.0.1)', value: 'ADDR' },
  'base-url': { type: 'string', help: 'Jupyter base_url (default: /)', value: 'URL' },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
} satisfies FlagSpec;

const CONTENTS_USAGE = `Usage: jupyter-store contents [options]

Serve the Jupyter-compatible contents API over a directory (no authentication:
it binds to loopback only).

Options:
${describeFlags(CONTENTS_FLAGS)}`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (isStoreCommand(command)) {
    // These handle their own errors: exit status 1 with the server's message, 2 on bad usage.
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
    case 'contents':
      return runContents(rest);
    case 'enable':
      return runEnable(rest);
    case 'disable':
      return runDisable(rest);
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

/** `jupyter-store contents`: the contents API alone, for tests and benchmarks. */
async function runContents(argv: readonly string[]): Promise<void> {
  const { values } = parseFlags(argv, CONTENTS_FLAGS);
  if (values.help) {
    process.stdout.write(CONTENTS_USAGE);
    return;
  }
  const port = values.port === undefined ? 8888 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port: '${values.port}' is not a port`);
  }
  const ip = (values.ip as string | undefined) ?? '127.0.0.1';
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(ip)) {
    throw new UsageError(
      `--ip: '${ip}' is not a loopback address; the contents server has no authentication`
    );
  }
  const rootDir = path.resolve(
    (values['root-dir'] as string | undefined) ??
      mkdtempSync(path.join(os.tmpdir(), 'jupyter-store-'))
  );
  const { createApp } = await import('../app.js');
  const app = createApp({ rootDir, baseUrl: values['base-url'] as string | undefined });
  const server = app.listen(port, ip, () => {
    const address = server.address();
    const actualPort = typeof address === 'object' && address ? address.port : port;
    process.stdout.write(
      `jupyter-store contents API serving ${rootDir}\n    http://${ip.includes(':') ? `[${ip}]` : ip}:${actualPort}${app.locals.baseUrl ?? '/'}api/contents\n`
    );
  });
  server.on('error', (error: Error) => {
    process.stderr.write(`jupyter-store: cannot listen on ${ip}:${port}: ${error.message}\n`);
    process.exit(1);
  });
  const stop = () => {
    server.close(() => {
      void (app.locals.contentsManager as ContentsManager).close().finally(() => process.exit(0));
    });
    server.closeIdleConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
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
