/**
 * The Kubernetes deployment files of docs/deploy parse, say what docs/deploying.md says they say,
 * and agree with each other and with the product: the single-user settings load as the gateway
 * loads them, the credential service's settings pass its own start-up checks, the URLs and
 * labels on both sides name the same Service and pods, and the image installs the wheel that
 * `scripts/package.sh` builds and runs the command the chart runs.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import picomatch from 'picomatch';
import { parse, parseAllDocuments } from 'yaml';
import { checkPolicySettings } from '../../src/hub/policy';
import { loadStoreSettings, splitSettingsFlags } from '../../src/settings';
import { hubCredentialsFromSettings } from '../../src/storage/hubCredentials';

const ROOT = resolve(__dirname, '..', '..', '..', '..');
const DEPLOY_DIR = join(ROOT, 'docs', 'deploy');

/** A YAML mapping, as the tests walk it. */
type Mapping = Record<string, unknown>;

/** The value at `path` below `root`; fails the test when a step is missing. */
function at(root: unknown, ...path: string[]): unknown {
  let node = root;
  for (const [index, key] of path.entries()) {
    if (typeof node !== 'object' || node === null || !(key in node)) {
      throw new Error(`no ${path.slice(0, index + 1).join('.')} in the document`);
    }
    node = (node as Mapping)[key];
  }
  return node;
}

function readText(name: string): string {
  return readFileSync(join(DEPLOY_DIR, name), 'utf8');
}

const values = parse(readText('z2jh-values.yaml')) as Mapping;
const manifests = parseAllDocuments(readText('credentials-service.yaml')).map(document => {
  expect(document.errors).toEqual([]);
  return document.toJS() as Mapping;
});
const dockerfile = readText('singleuser.Dockerfile');

/** The one manifest of `kind` in credentials-service.yaml. */
function manifest(kind: string): Mapping {
  const found = manifests.filter(entry => entry.kind === kind);
  expect(found).toHaveLength(1);
  return found[0];
}

interface IContainer {
  command: string[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string } } }[];
  ports: { name: string; containerPort: number }[];
}

const deployment = manifest('Deployment');
const service = manifest('Service');
const container = (at(deployment, 'spec', 'template', 'spec', 'containers') as IContainer[])[0];
const serviceEnv = Object.fromEntries(container.env.map(entry => [entry.name, entry]));

/** The cluster DNS name and port of the credential service's Service. */
const serviceAddress = `${String(at(service, 'metadata', 'name'))}.${String(
  at(service, 'metadata', 'namespace')
)}.svc.cluster.local:${String((at(service, 'spec', 'ports') as { port: number }[])[0].port)}`;

/** The single-user server's StoreSettings in the file the chart mounts. */
const configFile = at(values, 'singleuser', 'extraFiles', 'jupyter-store-config') as {
  mountPath: string;
  data: { StoreSettings: Mapping };
};
const singleuserEnv = at(values, 'singleuser', 'extraEnv') as Record<string, string>;

describe('docs/deploy/z2jh-values.yaml', () => {
  it('runs jupyter-store singleuser in the image as the spawner command', () => {
    expect(at(values, 'singleuser', 'cmd')).toEqual(['jupyter-store', 'singleuser']);
    expect(at(values, 'singleuser', 'image', 'name')).toEqual(expect.any(String));
    expect(at(values, 'singleuser', 'image', 'tag')).toEqual(expect.any(String));
  });

  it('gives single-user servers settings that load, for their own user, with no key', () => {
    expect(configFile.mountPath).toBe('/etc/jupyter/jupyter_store_config.json');
    expect(Object.keys(singleuserEnv).sort()).toEqual([
      'STORE_OBJECT_BUCKET',
      'STORE_OBJECT_ENDPOINT_URL'
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'deploy-docs-'));
    try {
      const file = join(dir, 'jupyter_store_config.json');
      writeFileSync(file, JSON.stringify(configFile.data));
      const env = {
        ...singleuserEnv,
        JUPYTER_CONFIG_DIR: dir,
        JUPYTER_DATA_DIR: dir,
        JUPYTERHUB_USER: 'alice',
        JUPYTERHUB_API_TOKEN: 'token-of-alices-server'
      };
      const { settings } = loadStoreSettings({ configFile: file, env });
      expect(settings.workspace_prefix).toBe('workspace/alice');
      expect(settings.object_bucket).toBe('notebooks');
      expect(settings.clone_buckets).toEqual([]);
      expect(settings.object_access_key_id).toBeUndefined();
      expect(settings.object_secret_access_key).toBeUndefined();
      // The gateway's own check: the service's provider, not keys.
      expect(hubCredentialsFromSettings(settings, env)).toBeDefined();
      expect(new URL(settings.credentials_service_url ?? '').host).toBe(serviceAddress);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the two scopes the gateway and the credential service need in the server token', () => {
    expect(at(values, 'hub', 'config', 'KubeSpawner', 'server_token_scopes')).toEqual(
      expect.arrayContaining(['access:servers!server', 'users:activity!user'])
    );
    // Long enough for the gateway to drain its archive queue on SIGTERM.
    expect(at(values, 'hub', 'config', 'KubeSpawner', 'delete_grace_period')).toBeGreaterThan(5);
  });

  it('registers the credential service at its Service, without a command or admin', () => {
    const services = at(values, 'hub', 'services') as Record<string, Mapping>;
    const name = String(at(deployment, 'metadata', 'name'));
    expect(Object.keys(services)).toEqual([name]);
    expect(new URL(String(services[name].url)).host).toBe(serviceAddress);
    expect(services[name]).not.toHaveProperty('command');
    expect(services[name]).not.toHaveProperty('admin');
    expect(serviceEnv.JUPYTERHUB_SERVICE_PREFIX.value).toBe(`/services/${name}/`);
  });

  it('lets single-user pods reach the S3 API and the credential service, and no other port', () => {
    const rules = at(values, 'singleuser', 'networkPolicy', 'egress') as {
      to: { podSelector: { matchLabels: Record<string, string> } }[];
      ports: { port: number }[];
    }[];
    expect(at(values, 'singleuser', 'networkPolicy', 'egressAllowRules', 'privateIPs')).toBe(false);
    const ports = rules.flatMap(rule => rule.ports.map(entry => entry.port)).sort();
    expect(ports).toEqual([8080, 9000]);
    expect(new URL(singleuserEnv.STORE_OBJECT_ENDPOINT_URL).port).toBe('9000');
    const podLabels = at(deployment, 'spec', 'template', 'metadata', 'labels') as Mapping;
    const toService = rules.find(rule => rule.ports[0].port === container.ports[0].containerPort);
    expect(podLabels).toMatchObject(toService?.to[0].podSelector.matchLabels ?? { none: true });
  });

  it('culls idle servers after longer than the gateway and the Hub take to record activity', () => {
    expect(at(values, 'cull', 'enabled')).toBe(true);
    // The gateway posts activity at most every 30 s; the Hub polls the proxy every 300 s.
    expect(Number(at(values, 'cull', 'timeout'))).toBeGreaterThan(300);
  });
});

describe('docs/deploy/credentials-service.yaml', () => {
  it('runs jupyter-store credentials-service with settings that pass its start-up checks', () => {
    expect(container.command.slice(0, 2)).toEqual(['jupyter-store', 'credentials-service']);
    const { flags, rest } = splitSettingsFlags(container.command.slice(2));
    expect(rest).toEqual(['--url=http://0.0.0.0:8080']);
    const { settings } = loadStoreSettings({
      flags,
      keepWorkspaceTemplate: true,
      env: {
        STORE_OBJECT_ENDPOINT_URL: serviceEnv.STORE_OBJECT_ENDPOINT_URL.value,
        STORE_OBJECT_BUCKET: serviceEnv.STORE_OBJECT_BUCKET.value,
        JUPYTER_CONFIG_DIR: tmpdir()
      }
    });
    expect(() =>
      checkPolicySettings({
        bucket: settings.object_bucket,
        workspaceTemplate: settings.workspace_prefix,
        namedPrefix: settings.named_prefix,
        publishedPrefix: settings.published_prefix
      })
    ).not.toThrow();
    // Both sides name the same bucket, endpoint and per-user prefix.
    expect(settings.workspace_prefix).toBe(configFile.data.StoreSettings.workspace_prefix);
    expect(serviceEnv.STORE_OBJECT_BUCKET.value).toBe(singleuserEnv.STORE_OBJECT_BUCKET);
    expect(serviceEnv.STORE_OBJECT_ENDPOINT_URL.value).toBe(
      singleuserEnv.STORE_OBJECT_ENDPOINT_URL
    );
  });

  it('takes the long-lived key from a Secret, which nothing else in the files reads', () => {
    const secretNames = new Set(
      container.env.flatMap(entry => entry.valueFrom?.secretKeyRef?.name ?? [])
    );
    expect([...secretNames]).toHaveLength(1);
    expect(
      container.env.filter(entry => entry.valueFrom?.secretKeyRef).map(entry => entry.name)
    ).toEqual(['STORE_OBJECT_ACCESS_KEY_ID', 'STORE_OBJECT_SECRET_ACCESS_KEY']);
    const secretName = [...secretNames][0];
    expect(JSON.stringify(values)).not.toContain(secretName);
    expect(JSON.stringify(values)).not.toMatch(/ACCESS_KEY|SECRET_ACCESS/);
    // In a namespace apart from the hub's, whose role reads every Secret of its own.
    const hubNamespace = new URL(String(serviceEnv.JUPYTERHUB_API_URL.value)).hostname.split(
      '.'
    )[1];
    expect(at(deployment, 'metadata', 'namespace')).not.toBe(hubNamespace);
  });

  it('admits only single-user servers and the proxy, and may reach the Hub API', () => {
    const policy = manifest('NetworkPolicy');
    const from = at(policy, 'spec', 'ingress') as {
      from: { podSelector: { matchLabels: { component: string } } }[];
    }[];
    expect(from.flatMap(rule => rule.from.map(peer => peer.podSelector.matchLabels))).toEqual([
      { component: 'singleuser-server' },
      { component: 'proxy' }
    ]);
    expect(at(deployment, 'spec', 'template', 'metadata', 'labels')).toMatchObject({
      'hub.jupyter.org/network-access-hub': 'true'
    });
    expect(at(values, 'hub', 'networkPolicy', 'interNamespaceAccessLabels')).toBe('accept');
  });
});

describe('docs/deploy/singleuser.Dockerfile', () => {
  const version = (
    JSON.parse(readFileSync(join(ROOT, 'packages', 'server', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

  it('copies the wheel scripts/package.sh builds, and nothing else', () => {
    const copies = [...dockerfile.matchAll(/^COPY\s+(\S+)\s+(\S+)$/gm)];
    expect(copies.map(match => match[1])).toEqual(['jupyter_store-*.whl']);
    expect(readFileSync(join(ROOT, 'scripts', 'package.sh'), 'utf8')).toContain(
      'wheel="dist/jupyter_store-${version}-py3-none-any.whl"'
    );
    expect(picomatch.isMatch(`jupyter_store-${version}-py3-none-any.whl`, copies[0][1])).toBe(true);
  });

  it("installs it as the README's image does, on a docker-stacks base, and checks the result", () => {
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=quay\.io\/jupyter\/base-notebook:/m);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const install = 'pip install --no-cache-dir /tmp/jupyter_store-*.whl';
    expect(readme).toContain(install);
    expect(dockerfile).toContain(install);
    const labextension = (
      JSON.parse(readFileSync(join(ROOT, 'packages', 'labextension', 'package.json'), 'utf8')) as {
        name: string;
      }
    ).name;
    expect(dockerfile).toContain(`grep -F '${labextension}'`);
  });

  it('runs the command the chart runs', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
    expect(JSON.parse(cmd?.[1] ?? 'null')).toEqual(at(values, 'singleuser', 'cmd'));
  });
});

describe('docs/deploying.md', () => {
  it('links every file of docs/deploy, and links none that is missing', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'deploying.md'), 'utf8');
    const linked = new Set([...guide.matchAll(/\]\((deploy\/[^)#\s]+)\)/g)].map(match => match[1]));
    const files = readdirSync(DEPLOY_DIR).map(name => `deploy/${name}`);
    expect([...linked].sort()).toEqual(files.sort());
  });
});
