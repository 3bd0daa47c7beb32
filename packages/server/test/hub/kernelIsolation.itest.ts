/**
 * What notebook code can reach on a real JupyterHub whose single-user servers take per-user
 * credentials from the credential service (a service the Hub runs), against a real MinIO: a
 * kernel in alice's server gathers every credential it can find (its environment, the files of
 * its home and of the runtime directory, and what the credential service answers its server's
 * token), and none of them reads, writes or lists bob's workspace, while the service's answer
 * does reach alice's own. Alice's tokens do not open bob's server either.
 */
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig
} from '@aws-sdk/client-s3';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { freePort } from '../support/jupyterServer';
import { withKernel } from '../support/kernel';
import { credentialServiceConfig, singleuserConfigDir, startHub, type IHub } from '../support/hub';
import {
  createVersionedBucket,
  s3ClientFor,
  startMinio,
  type IObjectServer
} from '../support/objectServers';
import { join } from 'node:path';

jest.setTimeout(300_000);

const BUCKET = 'hub-isolation';
const BOB_KEY = 'workspace/bob/secret.ipynb';
const BOB_TEXT = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}';

/** One set of S3 credentials that notebook code found, and where. */
interface IFoundCredentials {
  where: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** What the kernel reports. */
interface IKernelFindings {
  env: Record<string, string>;
  files: Record<string, string>;
  service: Record<string, string>;
}

let minio: IObjectServer;
let root: S3Client;
let hub: IHub;
let configDir: string | undefined;
let serviceUrl: string;
let aliceToken: string;

beforeAll(async () => {
  configDir = await singleuserConfigDir();
  minio = await startMinio();
  await createVersionedBucket(minio, BUCKET);
  root = s3ClientFor(minio);
  await root.send(new PutObjectCommand({ Bucket: BUCKET, Key: BOB_KEY, Body: BOB_TEXT }));
  const service = credentialServiceConfig({
    port: await freePort(),
    endpoint: minio.endpoint,
    bucket: BUCKET,
    region: minio.region,
    accessKeyId: minio.accessKeyId,
    secretAccessKey: minio.secretAccessKey
  });
  serviceUrl = service.url;
  hub = await startHub({
    singleuserArgs: [
      `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
      `--StoreSettings.object_bucket=${BUCKET}`,
      `--StoreSettings.object_region_name=${minio.region}`,
      '--StoreSettings.workspace_prefix=workspace/{username}',
      `--StoreSettings.credentials_service_url=${serviceUrl}`
    ],
    // No key of any kind: the servers' only credential is their Hub token.
    singleuserEnv: { JUPYTER_CONFIG_PATH: configDir },
    extraConfig: service.extraConfig
  });
  // Bob has a notebook in his home as well as in his workspace.
  await mkdir(hub.homeOf('bob'), { recursive: true });
  await writeFile(join(hub.homeOf('bob'), 'secret.ipynb'), BOB_TEXT);
  await Promise.all(['alice', 'bob'].map(user => hub.startServer(user)));
  const created = await hub.api('POST', 'users/alice/tokens', { note: 'isolation test' });
  expect(created.status).toBe(201);
  aliceToken = ((await created.json()) as { token: string }).token;
});

afterAll(async () => {
  await hub?.stop();
  root?.destroy();
  await minio?.dispose();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

/**
 * Python for alice's kernel: its environment, every readable text file below its home and the
 * runtime directory, and the credential service's answer to the server's own token. The result
 * is the cell's value, JSON in its `text/plain` form.
 */
function gatherCode(url: string): string {
  return `
import json, os, urllib.request
from jupyter_core.paths import jupyter_runtime_dir
print(dict(os.environ))
found = {'env': dict(os.environ), 'files': {}, 'service': {}}
for top in (os.path.expanduser('~'), jupyter_runtime_dir()):
    for folder, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if os.path.getsize(path) <= 262144:
                    with open(path, encoding='utf-8') as handle:
                        found['files'][path] = handle.read()
            except (OSError, UnicodeDecodeError):
                pass
request = urllib.request.Request(
    ${JSON.stringify(`${url}credentials`)}, data=b'', method='POST',
    headers={'Authorization': 'token ' + os.environ['JUPYTERHUB_API_TOKEN']})
with urllib.request.urlopen(request, timeout=30) as answer:
    found['service'] = json.load(answer)
class Findings:
    def __repr__(self):
        return json.dumps(found)
Findings()
`;
}

/** Every pair of S3 credentials in the findings: variables, JSON and INI files, the service. */
function credentialsIn(findings: IKernelFindings): IFoundCredentials[] {
  const found: IFoundCredentials[] = [];
  const pairs = (where: string, values: Record<string, unknown>): void => {
    const entries = Object.entries(values);
    const pick = (pattern: RegExp): string | undefined => {
      const value = entries.find(([name]) => pattern.test(name))?.[1];
      return typeof value === 'string' && value !== '' ? value : undefined;
    };
    const accessKeyId = pick(/access_key(_id)?$/i);
    const secretAccessKey = pick(/secret(_access)?_key$/i);
    if (accessKeyId && secretAccessKey) {
      found.push({ where, accessKeyId, secretAccessKey, sessionToken: pick(/session_token$/i) });
    }
    for (const [name, value] of entries) {
      if (value && typeof value === 'object') {
        pairs(`${where}.${name}`, value as Record<string, unknown>);
      }
    }
  };
  pairs('environment', findings.env);
  pairs('credential service', findings.service);
  for (const [path, text] of Object.entries(findings.files)) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object') pairs(path, parsed as Record<string, unknown>);
    } catch {
      // INI files (`~/.aws/credentials`): `name = value` lines, one section at a time.
      const values: Record<string, string> = {};
      for (const line of text.split('\n')) {
        const match = /^\s*([A-Za-z_]+)\s*=\s*(\S+)\s*$/.exec(line);
        if (match) values[match[1]] = match[2];
      }
      pairs(path, values);
    }
  }
  return found;
}

/** The S3 error name of a refused call, or 'allowed'. */
async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'allowed';
  } catch (error) {
    return (error as { name: string }).name;
  }
}

function clientWith(credentials: IFoundCredentials): S3Client {
  const config: S3ClientConfig = {
    endpoint: minio.endpoint,
    region: minio.region,
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      sessionToken: credentials.sessionToken
    }
  };
  return new S3Client(config);
}

describe("a kernel in alice's server", () => {
  let findings: IKernelFindings;
  let credentials: IFoundCredentials[];

  beforeAll(async () => {
    const host = {
      url: (relative: string) => `${hub.url}/user/alice/${relative}`,
      token: aliceToken
    };
    const text = await withKernel(host, kernel => kernel.execute(gatherCode(serviceUrl), 60_000));
    findings = JSON.parse(text) as IKernelFindings;
    credentials = credentialsIn(findings);
  });

  it('has no S3 key or secret in its environment', () => {
    const names = Object.keys(findings.env);
    expect(names.filter(name => /^(STORE_OBJECT_|AWS_)/.test(name))).toEqual([]);
    // It is a Hub's server: its token is there, with which it asks the service.
    expect(findings.env.JUPYTERHUB_USER).toBe('alice');
    expect(findings.env.JUPYTERHUB_API_TOKEN).toBeTruthy();
    const everything = JSON.stringify(findings.env) + JSON.stringify(findings.files);
    expect(everything).not.toContain(minio.secretAccessKey);
    expect(everything).not.toContain(minio.accessKeyId);
  });

  it("finds only the service's short-lived credentials, which reach alice's workspace", async () => {
    expect(credentials.map(found => found.where)).toEqual(['credential service']);
    const service = credentials[0];
    expect(service.sessionToken).toBeTruthy();
    expect(service.accessKeyId).not.toBe(minio.accessKeyId);
    const s3 = clientWith(service);
    try {
      const key = 'workspace/alice/from-kernel.ipynb';
      expect(
        await outcome(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '{}' })))
      ).toBe('allowed');
      expect(await outcome(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key })))).toBe(
        'allowed'
      );
      const listed = await s3.send(
        new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/alice/' })
      );
      expect(listed.Contents?.map(object => object.Key)).toContain(key);
    } finally {
      s3.destroy();
    }
  });

  it("cannot read, write or list bob's workspace with anything it found", async () => {
    expect(credentials.length).toBeGreaterThan(0);
    for (const found of credentials) {
      const s3 = clientWith(found);
      try {
        const attempts = {
          read: await outcome(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: BOB_KEY }))),
          write: await outcome(
            s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: BOB_KEY, Body: 'overwritten' }))
          ),
          list: await outcome(
            s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'workspace/bob/' }))
          ),
          listAll: await outcome(s3.send(new ListObjectsV2Command({ Bucket: BUCKET })))
        };
        expect({ where: found.where, ...attempts }).toEqual({
          where: found.where,
          read: 'AccessDenied',
          write: 'AccessDenied',
          list: 'AccessDenied',
          listAll: 'AccessDenied'
        });
      } finally {
        s3.destroy();
      }
    }
    const still = await root.send(new GetObjectCommand({ Bucket: BUCKET, Key: BOB_KEY }));
    expect(await still.Body?.transformToString()).toBe(BOB_TEXT);
  });

  it("cannot open bob's server with alice's tokens", async () => {
    const tokens = {
      'her API token': aliceToken,
      'her server token': findings.env.JUPYTERHUB_API_TOKEN
    };
    for (const [which, token] of Object.entries(tokens)) {
      for (const path of ['api/contents/secret.ipynb', `api/store/versions/secret.ipynb`]) {
        const response = await fetch(`${hub.url}/user/bob/${path}`, {
          headers: { Authorization: `token ${token}` },
          redirect: 'manual',
          signal: AbortSignal.timeout(30_000)
        });
        await response.arrayBuffer();
        expect({ which, path, status: response.status }).toEqual({ which, path, status: 403 });
      }
    }
    // The same request with bob's own token works: the 403 above is about whose token it is.
    const created = await hub.api('POST', 'users/bob/tokens', { note: 'isolation test' });
    const bobToken = ((await created.json()) as { token: string }).token;
    const own = await fetch(`${hub.url}/user/bob/api/contents/secret.ipynb`, {
      headers: { Authorization: `token ${bobToken}` },
      signal: AbortSignal.timeout(30_000)
    });
    expect(own.status).toBe(200);
    await own.arrayBuffer();
  });
});
