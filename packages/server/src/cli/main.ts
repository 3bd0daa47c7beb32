#!/usr/bin/env node
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../app';
import type { ContentsManager } from '../contents/manager';

const USAGE = `Usage: jupyter-store contents [options]

Serve the Jupyter-compatible contents API over a directory (no authentication:
it binds to loopback only).

Options:
  --root-dir DIR   directory to serve (default: a new temporary directory)
  --port N         port to listen on (default: 8888; 0 picks a free one)
  --ip ADDR        loopback address to bind (default: 127.0.0.1)
  --base-url URL   Jupyter base_url (default: /)
  -h, --help       show this help
`;

/** Print a one-line usage error and exit 2, as the CLI promises for every bad flag. */
function usageError(message: string): never {
  process.stderr.write(`jupyter-store: ${message} (see --help)\n`);
  process.exit(2);
}

function main(argv: string[]): void {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(USAGE);
    return;
  }
  if (command !== 'contents') usageError(`unknown command '${command}'`);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        'root-dir': { type: 'string' },
        port: { type: 'string' },
        ip: { type: 'string' },
        'base-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true,
      allowPositionals: false
    }));
  } catch (error) {
    usageError((error as Error).message.split('\n')[0]);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const port = values.port === undefined ? 8888 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    usageError(`--port: '${values.port}' is not a port`);
  const ip = (values.ip as string | undefined) ?? '127.0.0.1';
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(ip)) {
    usageError(
      `--ip: '${ip}' is not a loopback address; the contents server has no authentication`
    );
  }
  const rootDir = path.resolve(
    (values['root-dir'] as string | undefined) ??
      mkdtempSync(path.join(os.tmpdir(), 'jupyter-store-'))
  );
  const app = createApp({ rootDir, baseUrl: values['base-url'] as string | undefined });
  const server = app.listen(port, ip, () => {
    const address = server.address();
    const actualPort = typeof address === 'object' && address ? address.port : port;
    process.stdout.write(
      `jupyter-store contents API serving ${rootDir}\n    http://${ip.includes(':') ? `[${ip}]` : ip}:${actualPort}${app.locals.baseUrl ?? '/'}api/contents\n`
    );
  });
  server.on('error', error => {
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

main(process.argv.slice(2));
