import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { ArchiveFilter } from '../filter';

/**
 * Where under the root a file-system watcher cannot be trusted, and why.
 *
 * #### Notes
 * inotify reports what passes through this machine's kernel. On a network or cluster file
 * system (NFS, SMB, Ceph, Lustre…), a FUSE file system (sshfs, gcsfuse, s3fs…) or a host share
 * (9p, virtiofs, VirtualBox's vboxsf…), files written by other clients, by the FUSE daemon or by
 * the host change without any event here. Only a scan finds those changes.
 */
export interface IBlindSpot {
  /** API path relative to the root, `/`-separated; '' is the root itself. */
  readonly path: string;
  /** For the log and the status, e.g. "/shared is an NFS mount: inotify does not see…". */
  readonly reason: string;
}

/** One line of `/proc/self/mountinfo` (proc(5)), with its paths unescaped. */
export interface IMountInfo {
  readonly mountId: number;
  readonly parentId: number;
  /** `major:minor` of the device (`st_dev` of files in this mount). */
  readonly device: string;
  /** The directory of the file system that is mounted (a bind mount's source). */
  readonly root: string;
  /** Where it is mounted, relative to this process's root directory. */
  readonly mountPoint: string;
  readonly options: string;
  /** Propagation and other tagged fields (`shared:5`, `master:1`…); zero or more. */
  readonly optionalFields: readonly string[];
  /** `nfs4`, `cifs`, `fuse.sshfs`, `ext4`… (`type.subtype` for FUSE). */
  readonly fsType: string;
  /** The device or server (`10.0.0.5:/export`, `//server/share`, `/dev/sda1`, `none`). */
  readonly source: string;
  readonly superOptions: string;
}

/** A kind of file system on which inotify misses changes. */
export interface IRemoteKind {
  /** "an NFS mount", "a FUSE mount (sshfs)". */
  readonly label: string;
  /** What inotify does not see there: "writes by other clients". */
  readonly misses: string;
}

/**
 * Parse `/proc/self/mountinfo`. Lines that do not have the documented shape are skipped.
 *
 * #### Notes
 * Each line is `id parent major:minor root mount-point options [optional fields…] - type
 * source super-options`. There may be any number of optional fields, so the fields after them
 * are found from the lone `-`. The kernel escapes space, tab, newline and backslash in paths as
 * octal (`\040`, `\011`, `\012`, `\134`); no other byte is escaped, so a field never contains a
 * literal space.
 */
export function parseMountInfo(text: string): IMountInfo[] {
  const mounts: IMountInfo[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(' ');
    const separator = fields.indexOf('-', 6);
    if (separator < 0 || fields.length < separator + 3) continue;
    const mountId = Number(fields[0]);
    const parentId = Number(fields[1]);
    if (!Number.isInteger(mountId) || !Number.isInteger(parentId)) continue;
    mounts.push({
      mountId,
      parentId,
      device: fields[2],
      root: unescapeMountField(fields[3]),
      mountPoint: unescapeMountField(fields[4]),
      options: fields[5],
      optionalFields: fields.slice(6, separator),
      fsType: unescapeMountField(fields[separator + 1]),
      source: unescapeMountField(fields[separator + 2]),
      superOptions: unescapeMountField(fields.slice(separator + 3).join(' '))
    });
  }
  return mounts;
}

/** Undo the kernel's octal escapes (`\040` → space). */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(parseInt(octal, 8))
  );
}

/**
 * Is a file-system type, as `/proc/self/mountinfo` names it, one on which inotify misses
 * changes? Null for local file systems (ext4, xfs, btrfs, tmpfs, overlay…).
 */
export function remoteKindByName(fsType: string): IRemoteKind | null {
  const type = fsType.toLowerCase();
  if (type === 'fuseblk' || type === 'fuse.lxcfs') {
    // ntfs-3g, exfat-fuse: a local disk only this kernel writes to. lxcfs: /proc files.
    return null;
  }
  if (type === 'fuse' || type.startsWith('fuse.')) {
    const subtype = type.slice('fuse.'.length);
    return {
      label: subtype ? `a FUSE mount (${subtype})` : 'a FUSE mount',
      misses: FUSE_MISSES
    };
  }
  return REMOTE_BY_NAME.get(type) ?? null;
}

/**
 * Is a `statfs` `f_type` (Linux magic number) one on which inotify misses changes? Null for
 * local file systems and unknown numbers.
 */
export function remoteKindByMagic(type: number | bigint): IRemoteKind | null {
  return REMOTE_BY_MAGIC.get(Number(type)) ?? null;
}

/**
 * Find the parts of a root directory where inotify is blind: the root itself when it is on a
 * network, cluster, FUSE or host-shared file system, and every such mount point below it.
 *
 * #### Notes
 * - The root is classified by `statfs(2)` (`f_type`), named more precisely from the mount that
 *   holds it in `/proc/self/mountinfo` when that can be read. `fuseblk` (ntfs-3g on a local
 *   disk) shares FUSE's magic number but only this kernel writes to it, so it is not reported.
 * - Mounts below the root come from `/proc/self/mountinfo` (this process's mount namespace);
 *   the last mount on a mount point is the visible one. Mounts inside always-ignored folders
 *   (hidden ones, `node_modules`, `__pycache__`) are left out: the archive does not look there.
 * - Linux only (the magic numbers and mountinfo are Linux's); elsewhere the result is empty
 *   unless `statfs` and `mountInfo` are given. Never rejects: what cannot be read is skipped.
 */
export async function detectBlindSpots(
  rootDir: string,
  options: detectBlindSpots.IOptions = {}
): Promise<IBlindSpot[]> {
  const onLinux = (options.platform ?? process.platform) === 'linux';
  if (!onLinux && !options.statfs && options.mountInfo === undefined) return [];
  const statfs = options.statfs ?? ((dir: string) => fs.statfs(dir));
  const readMountInfo =
    typeof options.mountInfo === 'string'
      ? () => Promise.resolve(options.mountInfo as string)
      : (options.mountInfo ?? (() => fs.readFile('/proc/self/mountinfo', 'utf8')));
  const root = await fs.realpath(rootDir).catch(() => path.resolve(rootDir));

  const [rootType, mounts] = await Promise.all([
    statfs(root).then(
      result => result.type,
      () => undefined
    ),
    readMountInfo().then(parseMountInfo, () => [] as IMountInfo[])
  ]);

  // The visible mount at each mount point (a later mount on the same point hides earlier ones).
  const visible = new Map<string, IMountInfo>();
  for (const mount of mounts) visible.set(normalizeMountPoint(mount.mountPoint), mount);

  const spots: IBlindSpot[] = [];

  const holder = mountHolding(root, visible);
  const byName = holder ? remoteKindByName(holder.fsType) : null;
  const byMagic = rootType === undefined ? null : remoteKindByMagic(rootType);
  const localFuse = holder !== undefined && FUSE_LOCAL_TYPES.has(holder.fsType.toLowerCase());
  if (holder && byName) {
    spots.push({
      path: '',
      reason: `the root ${root} is on ${byName.label} (mounted at ${holder.mountPoint}, type ${holder.fsType}): inotify does not see ${byName.misses}`
    });
  } else if (byMagic && !localFuse) {
    spots.push({
      path: '',
      reason: `the root ${root} is on ${byMagic.label} (statfs type 0x${Number(rootType).toString(16)}): inotify does not see ${byMagic.misses}`
    });
  }

  const everything = new ArchiveFilter();
  const below: IBlindSpot[] = [];
  for (const [mountPoint, mount] of visible) {
    const apiPath = relativeBelow(root, mountPoint);
    if (!apiPath || !everything.entersDirectory(apiPath)) continue;
    const kind = remoteKindByName(mount.fsType);
    if (!kind) continue;
    below.push({
      path: apiPath,
      reason: `/${apiPath} is ${kind.label} (type ${mount.fsType}, from ${mount.source}): inotify does not see ${kind.misses}`
    });
  }
  below.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return [...spots, ...below];
}

export namespace detectBlindSpots {
  export interface IOptions {
    /** `fs.promises.statfs` by default; only `type` is read. */
    statfs?: (dir: string) => Promise<{ type: number | bigint }>;
    /** The text of `/proc/self/mountinfo`, or how to read it (default: the real file). */
    mountInfo?: string | (() => Promise<string>);
    /** `process.platform` by default. */
    platform?: NodeJS.Platform;
  }
}

/** The mount whose mount point is the root or its nearest ancestor. */
function mountHolding(
  root: string,
  visible: ReadonlyMap<string, IMountInfo>
): IMountInfo | undefined {
  let best: IMountInfo | undefined;
  let bestLength = -1;
  for (const [mountPoint, mount] of visible) {
    const holds = mountPoint === root || mountPoint === '/' || root.startsWith(`${mountPoint}/`);
    if (holds && mountPoint.length > bestLength) {
      best = mount;
      bestLength = mountPoint.length;
    }
  }
  return best;
}

/** The API path of a mount point strictly below the root, or undefined. */
function relativeBelow(root: string, mountPoint: string): string | undefined {
  const prefix = root === '/' ? '/' : `${root}/`;
  if (!mountPoint.startsWith(prefix) || mountPoint.length === prefix.length) return undefined;
  return mountPoint.slice(prefix.length);
}

function normalizeMountPoint(mountPoint: string): string {
  return mountPoint.length > 1 ? mountPoint.replace(/\/+$/, '') : mountPoint;
}

const OTHER_CLIENTS = 'writes by other clients';
const OTHER_NODES = 'writes by other nodes of the cluster';
const HOST = 'changes made on the host';
const FUSE_MISSES =
  "changes that do not pass through this machine's kernel (other clients, the FUSE daemon itself)";

/** FUSE types that are local disks (same magic number as every FUSE file system). */
const FUSE_LOCAL_TYPES = new Set(['fuseblk']);

const NFS: IRemoteKind = { label: 'an NFS mount', misses: OTHER_CLIENTS };
const SMB: IRemoteKind = { label: 'an SMB/CIFS mount', misses: OTHER_CLIENTS };
const FUSE: IRemoteKind = { label: 'a FUSE mount', misses: FUSE_MISSES };
const NINE_P: IRemoteKind = { label: 'a 9p mount (a host or VM share)', misses: HOST };
const CEPH: IRemoteKind = { label: 'a CephFS mount', misses: OTHER_CLIENTS };
const AFS: IRemoteKind = { label: 'an AFS mount', misses: OTHER_CLIENTS };

/**
 * `statfs` magic numbers of the file systems coreutils' `stat` labels "remote" (the list `tail
 * -f` uses to poll instead of using inotify; src/stat.c, linux/magic.h), plus 9p (labelled
 * local there, but a host's or another VM's share). Overlay and aufs, labelled remote there
 * out of caution, are left out: every container's root is one.
 */
const REMOTE_BY_MAGIC = new Map<number, IRemoteKind>([
  [0x6969, NFS],
  [0x517b, SMB],
  [0xff534d42, SMB],
  [0xfe534d42, SMB],
  [0x65735546, FUSE],
  [0x01021997, NINE_P],
  [0x00c36400, CEPH],
  [0x5346414f, AFS],
  [0x6b414653, AFS],
  [0x73757245, { label: 'a Coda mount', misses: OTHER_CLIENTS }],
  [0x564c, { label: 'a NetWare (NCP) mount', misses: OTHER_CLIENTS }],
  [0x7461636f, { label: 'an OCFS2 cluster file system', misses: OTHER_NODES }],
  [0x01161970, { label: 'a GFS2 cluster file system', misses: OTHER_NODES }],
  [0x47504653, { label: 'a GPFS (Spectrum Scale) mount', misses: OTHER_NODES }],
  [0x0bd00bd0, { label: 'a Lustre mount', misses: OTHER_CLIENTS }],
  [0x19830326, { label: 'a BeeGFS mount', misses: OTHER_CLIENTS }],
  [0xaad7aaea, { label: 'a PanFS mount', misses: OTHER_CLIENTS }],
  [0x013111a8, { label: 'an IBRIX mount', misses: OTHER_CLIENTS }],
  [0x61636673, { label: 'an ACFS cluster file system', misses: OTHER_NODES }],
  [0xbeefdead, { label: 'a StorNext mount', misses: OTHER_CLIENTS }],
  [0x786f4256, { label: 'a VirtualBox shared folder', misses: HOST }],
  [0xbacbacbc, { label: 'a VMware shared folder', misses: HOST }],
  [0x7c7c6673, { label: 'a Parallels shared folder', misses: HOST }]
]);

/** The same, by the type names mountinfo shows. */
const REMOTE_BY_NAME = new Map<string, IRemoteKind>([
  ['nfs', NFS],
  ['nfs4', NFS],
  ['cifs', SMB],
  ['smb3', SMB],
  ['smbfs', SMB],
  ['9p', NINE_P],
  ['virtiofs', { label: 'a virtiofs mount (a host share)', misses: HOST }],
  ['ceph', CEPH],
  ['afs', AFS],
  ['coda', { label: 'a Coda mount', misses: OTHER_CLIENTS }],
  ['ncpfs', { label: 'a NetWare (NCP) mount', misses: OTHER_CLIENTS }],
  ['ocfs2', { label: 'an OCFS2 cluster file system', misses: OTHER_NODES }],
  ['gfs2', { label: 'a GFS2 cluster file system', misses: OTHER_NODES }],
  ['gpfs', { label: 'a GPFS (Spectrum Scale) mount', misses: OTHER_NODES }],
  ['lustre', { label: 'a Lustre mount', misses: OTHER_CLIENTS }],
  ['beegfs', { label: 'a BeeGFS mount', misses: OTHER_CLIENTS }],
  ['panfs', { label: 'a PanFS mount', misses: OTHER_CLIENTS }],
  ['glusterfs', { label: 'a GlusterFS mount', misses: OTHER_CLIENTS }],
  ['orangefs', { label: 'an OrangeFS mount', misses: OTHER_CLIENTS }],
  ['pvfs2', { label: 'an OrangeFS mount', misses: OTHER_CLIENTS }],
  ['davfs', { label: 'a WebDAV mount', misses: OTHER_CLIENTS }],
  ['vboxsf', { label: 'a VirtualBox shared folder', misses: HOST }],
  ['vmhgfs', { label: 'a VMware shared folder', misses: HOST }],
  ['prl_fs', { label: 'a Parallels shared folder', misses: HOST }],
  [
    'autofs',
    {
      label: 'an automount point',
      misses: 'what is mounted there on first use (often a network file system)'
    }
  ]
]);
