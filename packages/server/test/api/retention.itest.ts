/**
 * The retention rule through a real gateway (`jupyter-store lab` with a real Jupyter Server)
 * archiving to MinIO: set, read back through the API and with the SDK, other rules kept, bad
 * bodies refused, cleared; the rule MinIO holds does not cover named copies; and the same rule
 * in the embedded store expires workspace versions but not a named copy.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  CopyObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  type LifecycleRule
} from '@aws-sdk/client-s3';
import { RetentionSchema } from '@jupyter-store/contract';
import { objectKey } from '../../src/storage/keys';
import type { ILifecycleRule } from '../../src/storage/lifecycle';
import { LocalObjectStore } from '../../src/storage/localStore';
import { startArchivingGateway, useArchivingLab, useObjectServer } from '../support/archivingLab';
import type { IGatewayProcess } from '../support/gateway';
import { mcBinary, type IObjectServer } from '../support/objectServers';
import { callGateway, runCli, saveNotebook, terminalEnv } from '../client/storeCli';

const BUCKET = 'retention';
const PREFIX = 'workspace/alice';
const RULE_ID = `jupyter-store-retention:${PREFIX}`;
const DAY = 24 * 60 * 60 * 1000;

/** Rules written with the SDK before the gateway starts: another tool's, and another user's. */
const BEFOREHAND: LifecycleRule[] = [
  {
    ID: 'other-tool',
    Status: 'Enabled',
    Filter: { Prefix: 'logs/' },
    Expiration: { Days: 30 }
  },
  {
    ID: 'jupyter-store-retention:workspace/bob',
    Status: 'Enabled',
    Filter: { Prefix: 'workspace/bob/' },
    NoncurrentVersionExpiration: { NoncurrentDays: 10, NewerNoncurrentVersions: 3 }
  }
];

describe('retention through a gateway archiving to MinIO', () => {
  /** The other rules as MinIO answers them, before the gateway touched the configuration. */
  let othersAsRead: LifecycleRule[] = [];

  const lab = useArchivingLab({
    bucket: BUCKET,
    gateway: async ({ s3 }) => {
      await s3.send(
        new PutBucketLifecycleConfigurationCommand({
          Bucket: BUCKET,
          LifecycleConfiguration: { Rules: BEFOREHAND }
        })
      );
      othersAsRead = (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET })))
        .Rules!;
      return { args: [`--StoreSettings.workspace_prefix=${PREFIX}`] };
    }
  });

  /** The bucket's rules as the SDK reads them, by ID. */
  async function rulesInBucket(): Promise<Map<string | undefined, LifecycleRule>> {
    const output = await lab.s3.send(
      new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET })
    );
    return new Map((output.Rules ?? []).map(rule => [rule.ID, rule]));
  }

  async function retention(method: string, body?: unknown) {
    return callGateway(lab.gateway, method, 'api/store/retention', body);
  }

  test('reads no rule of its own, and counts the others', async () => {
    const { status, body } = await retention('GET');
    expect(status).toBe(200);
    expect(RetentionSchema.parse(body)).toEqual({
      prefix: `${PREFIX}/`,
      rule: null,
      rule_id: RULE_ID,
      other_rules: 2
    });
  });

  test('sets the rule in the bucket, next to the rules that were there', async () => {
    const set = await retention('PUT', { keep_newest: 3, noncurrent_days: 14 });
    expect(set).toEqual({
      status: 200,
      body: {
        prefix: `${PREFIX}/`,
        rule: { keep_newest: 3, noncurrent_days: 14 },
        rule_id: RULE_ID,
        other_rules: 2
      }
    });
    expect(await retention('GET')).toEqual(set);

    const rules = await rulesInBucket();
    expect(rules.size).toBe(3);
    for (const other of othersAsRead) expect(rules.get(other.ID)).toEqual(other);
    const ours = rules.get(RULE_ID)!;
    expect(ours).toMatchObject({
      Status: 'Enabled',
      Filter: { Prefix: `${PREFIX}/` },
      NoncurrentVersionExpiration: { NoncurrentDays: 14, NewerNoncurrentVersions: 3 }
    });
    // Delete markers stay: no expiration of them, nor of current versions.
    expect(ours.Expiration).toBeUndefined();

    const changed = await retention('PUT', { keep_newest: 0, noncurrent_days: 1 });
    expect(changed.body).toMatchObject({ rule: { keep_newest: 0, noncurrent_days: 1 } });
    const after = await rulesInBucket();
    expect(after.size).toBe(3);
    expect(after.get(RULE_ID)?.NoncurrentVersionExpiration).toEqual({ NoncurrentDays: 1 });
    for (const other of othersAsRead) expect(after.get(other.ID)).toEqual(other);
  });

  test('the rule MinIO holds covers the archived copies and not a named copy', async () => {
    await saveNotebook(lab.gateway, 'covered.ipynb', 'one');
    const workspaceKey = objectKey(PREFIX, 'covered.ipynb');
    let versionId: string | undefined;
    for (const deadline = Date.now() + 30_000; versionId === undefined;) {
      const listed = await lab.s3.send(
        new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: workspaceKey })
      );
      versionId = listed.Versions?.find(version => version.Key === workspaceKey)?.VersionId;
      if (versionId === undefined) {
        if (Date.now() > deadline) throw new Error(`${workspaceKey} was not archived`);
        await new Promise(resolve => setTimeout(resolve, 200));
      }
    }
    // A named version, as named versions are kept: `<named_prefix>/<workspace key>/<version>`.
    const namedKey = `${objectKey('named', workspaceKey)}/${versionId}`;
    await lab.s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: namedKey,
        CopySource: `${BUCKET}/${workspaceKey}?versionId=${versionId}`
      })
    );
    const prefix = (await rulesInBucket()).get(RULE_ID)?.Filter?.Prefix;
    expect(prefix).toBe(`${PREFIX}/`);
    const listed = await lab.s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET }));
    const keys = new Set((listed.Versions ?? []).map(version => version.Key!));
    expect(keys).toContain(workspaceKey);
    expect(keys).toContain(namedKey);
    const covered = [...keys].filter(key => key.startsWith(prefix!)).sort();
    expect(covered).toContain(workspaceKey);
    expect(covered).not.toContain(namedKey);
    expect(`${PREFIX}2/covered.ipynb`.startsWith(prefix!)).toBe(false);
  });

  test.each([
    ['no field', {}],
    ['keep_newest below 0', { keep_newest: -1, noncurrent_days: 1 }],
    ['keep_newest over 100', { keep_newest: 101, noncurrent_days: 1 }],
    ['noncurrent_days 0', { keep_newest: 1, noncurrent_days: 0 }],
    ['noncurrent_days over 36500', { keep_newest: 1, noncurrent_days: 36501 }],
    ['a fraction', { keep_newest: 1.5, noncurrent_days: 1 }],
    ['a number as text', { keep_newest: '3', noncurrent_days: 1 }],
    ['another field', { keep_newest: 1, noncurrent_days: 1, expired_object_delete_marker: true }],
    ['an array', [1, 2]]
  ])('a body with %s is 400 and changes nothing', async (_what, body) => {
    const before = await rulesInBucket();
    const answer = await retention('PUT', body);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ reason: 'bad request', message: expect.any(String) });
    expect(await rulesInBucket()).toEqual(before);
  });

  test('a body that is not JSON is 400', async () => {
    const response = await fetch(lab.gateway.url('api/store/retention'), {
      method: 'PUT',
      headers: { Authorization: `token ${lab.gateway.token}`, 'Content-Type': 'application/json' },
      body: '{"keep_newest": 1,'
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ reason: 'bad request' });
  });

  test('the CLI shows and sets the rule', async () => {
    const env = terminalEnv(lab.gateway);
    const set = await runCli(
      ['retention', 'set', '--keep-newest', '5', '--noncurrent-days', '30'],
      env
    );
    expect(set).toMatchObject({ status: 0, stderr: '' });
    expect(set.stdout).toContain(`Retention for ${PREFIX}/: versions replaced 30 days ago`);
    expect((await rulesInBucket()).get(RULE_ID)?.NoncurrentVersionExpiration).toEqual({
      NoncurrentDays: 30,
      NewerNoncurrentVersions: 5
    });
    const shown = await runCli(['retention', 'show', '--json'], env);
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      rule: { keep_newest: 5, noncurrent_days: 30 },
      other_rules: 2
    });
    const usage = await runCli(['retention', 'set', '--keep-newest', '5'], env);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/^jupyter-store retention: set needs --noncurrent-days/);
  });

  test('clearing removes only its rule, and clearing again changes nothing', async () => {
    for (let round = 0; round < 2; round++) {
      const cleared = await retention('DELETE');
      expect(cleared).toEqual({
        status: 200,
        body: { prefix: `${PREFIX}/`, rule: null, rule_id: RULE_ID, other_rules: 2 }
      });
      const rules = await rulesInBucket();
      expect([...rules.values()]).toEqual(othersAsRead);
    }
  });

  test('the same rule in the embedded store expires workspace versions, not the named copy', async () => {
    await retention('PUT', { keep_newest: 1, noncurrent_days: 30 });
    const fromMinio = [...(await rulesInBucket()).values()] as ILifecycleRule[];
    const root = await fs.mkdtemp(path.join(tmpdir(), 'retention-embedded-'));
    let clock = Date.now();
    const embedded = new LocalObjectStore({ root, defaultBucket: BUCKET, now: () => clock });
    try {
      await embedded.putLifecycleRules(BUCKET, fromMinio);
      const key = objectKey(PREFIX, 'a.ipynb');
      const first = await embedded.put(BUCKET, key, Buffer.from('one'));
      const namedKey = `${objectKey('named', key)}/${first.versionId}`;
      await embedded.put(BUCKET, namedKey, Buffer.from('one'));
      await embedded.put(BUCKET, key, Buffer.from('two'));
      await embedded.put(BUCKET, key, Buffer.from('three'));
      clock += 32 * DAY;
      await embedded.put(BUCKET, key, Buffer.from('four'));
      await embedded.put(BUCKET, namedKey, Buffer.from('one'));
      const bodies = async (which: string) =>
        Promise.all(
          (await embedded.listVersions(BUCKET, which)).map(async version =>
            (await embedded.get(BUCKET, which, version.versionId)).body.toString()
          )
        );
      expect(await bodies(key)).toEqual(['four', 'three']);
      expect(await bodies(namedKey)).toEqual(['one', 'one']);
    } finally {
      await embedded.close();
      await fs.rm(root, { recursive: true, force: true });
    }
    await retention('DELETE');
  });
});

describe('retention refused', () => {
  const rig = useObjectServer({ buckets: [BUCKET] });
  const gateways: IGatewayProcess[] = [];

  afterAll(async () => {
    for (const gateway of gateways) await gateway.stop();
  });

  test('with an empty workspace prefix, setting a rule is 409 and writes nothing', async () => {
    const gateway = await startArchivingGateway(rig.server, BUCKET, {
      args: ['--StoreSettings.workspace_prefix=']
    });
    gateways.push(gateway);
    const read = await callGateway(gateway, 'GET', 'api/store/retention');
    expect(read).toMatchObject({ status: 200, body: { prefix: '', rule: null, other_rules: 0 } });
    const set = await callGateway(gateway, 'PUT', 'api/store/retention', {
      keep_newest: 1,
      noncurrent_days: 1
    });
    expect(set.status).toBe(409);
    expect(set.body).toMatchObject({ reason: 'no workspace prefix' });
    expect((set.body as { message: string }).message).toMatch(/named copies/);
    const error = await rig.s3
      .send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET }))
      .catch((failure: Error) => failure);
    expect(error).toMatchObject({ name: 'NoSuchLifecycleConfiguration' });
  });

  test('credentials without s3:PutLifecycleConfiguration get 403 AccessDenied', async () => {
    const user = { accessKeyId: 'retention-reader', secretAccessKey: 'retention-reader-secret' };
    await Private.addUserWithoutLifecycleWrites(rig.server, user);
    const gateway = await startArchivingGateway(rig.server, BUCKET, user);
    gateways.push(gateway);
    expect(await callGateway(gateway, 'GET', 'api/store/retention')).toMatchObject({
      status: 200,
      body: { rule: null }
    });
    const set = await callGateway(gateway, 'PUT', 'api/store/retention', {
      keep_newest: 1,
      noncurrent_days: 1
    });
    expect(set.status).toBe(403);
    expect(set.body).toMatchObject({ reason: 'AccessDenied' });
    expect((set.body as { message: string }).message).toMatch(
      /Could not write the lifecycle configuration of bucket "retention": access was denied/
    );
  });
});

describe('retention on versitygw, which has no lifecycle configuration', () => {
  const lab = useArchivingLab({ kind: 'versitygw', bucket: BUCKET });

  test.each([
    ['GET', undefined],
    ['PUT', { keep_newest: 1, noncurrent_days: 1 }],
    ['DELETE', undefined]
  ])('%s is 501 NotImplemented', async (method, body) => {
    const answer = await callGateway(lab.gateway, method, 'api/store/retention', body);
    expect(answer.status).toBe(501);
    expect(answer.body).toMatchObject({ reason: 'NotImplemented' });
    expect((answer.body as { message: string }).message).toMatch(
      /does not support bucket lifecycle configuration/
    );
  });
});

namespace Private {
  /**
   * A MinIO user that may do everything with the bucket except write its lifecycle
   * configuration, made with `mc admin` (its configuration in a temporary directory).
   */
  export async function addUserWithoutLifecycleWrites(
    server: IObjectServer,
    user: { accessKeyId: string; secretAccessKey: string }
  ): Promise<void> {
    const configDir = await fs.mkdtemp(path.join(tmpdir(), 'retention-mc-'));
    try {
      const policyFile = path.join(configDir, 'policy.json');
      await fs.writeFile(
        policyFile,
        JSON.stringify({
          Version: '2012-10-17',
          Statement: [
            {
              Effect: 'Allow',
              Action: ['s3:*'],
              Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`]
            },
            {
              Effect: 'Deny',
              Action: ['s3:PutLifecycleConfiguration'],
              Resource: [`arn:aws:s3:::${BUCKET}`]
            }
          ]
        })
      );
      const host = new URL(server.endpoint);
      host.username = server.accessKeyId;
      host.password = server.secretAccessKey;
      const mc = (...args: string[]) =>
        promisify(execFile)(mcBinary(), ['--config-dir', configDir, ...args], {
          env: { ...process.env, MC_HOST_store: host.toString().replace(/\/$/, '') }
        });
      await mc('admin', 'user', 'add', 'store', user.accessKeyId, user.secretAccessKey);
      await mc('admin', 'policy', 'create', 'store', 'no-lifecycle-writes', policyFile);
      await mc(
        'admin',
        'policy',
        'attach',
        'store',
        'no-lifecycle-writes',
        '--user',
        user.accessKeyId
      );
    } finally {
      await fs.rm(configDir, { recursive: true, force: true });
    }
  }
}
