import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  detectBlindSpots,
  parseMountInfo,
  remoteKindByMagic,
  remoteKindByName,
  unescapeMountField
} from '../../src/archive/sources/fileSystems';

/** Lines as the kernel writes them (proc(5) example, a container, a pod, a laptop, WSL 2). */
const PROC5_EXAMPLE =
  '36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue';
const CONTAINER_ROOT =
  '1021 982 0:112 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB:/var/lib/docker/overlay2/l/CD,upperdir=/var/lib/docker/overlay2/ef/diff,workdir=/var/lib/docker/overlay2/ef/work';
const HOME_EXT4 =
  '1040 1021 259:2 /var/lib/kubelet/pods/7c1/volumes/kubernetes.io~csi/pvc-1/mount /home/jovyan rw,relatime - ext4 /dev/nvme0n1p2 rw,errors=remount-ro';
const SHARED_NFS =
  '1101 1040 0:345 / /home/jovyan/shared rw,relatime shared:456 - nfs4 10.0.0.5:/exports/shared rw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.1.7,local_lock=none,addr=10.0.0.5';
const TEAM_CIFS =
  '311 1040 0:52 / /home/jovyan/team\\040share rw,relatime shared:170 - cifs //fileserver/team\\040share rw,vers=3.1.1,cache=strict,uid=1000,noforceuid,gid=1000,noforcegid,addr=10.1.2.3,file_mode=0755,dir_mode=0755,soft,nounix,serverino,mapposix,rsize=4194304,wsize=4194304';
const REMOTE_SSHFS =
  '402 1040 0:60 / /home/jovyan/work/remote rw,nosuid,nodev,relatime shared:220 - fuse.sshfs alice@build-host:/data rw,user_id=1000,group_id=1000';
const CACHE_GCSFUSE =
  '403 1040 0:61 / /home/jovyan/.cache/bucket rw,nosuid,nodev,relatime - fuse.gcsfuse my-bucket rw,user_id=1000,group_id=1000';
const CONFIG_TMPFS =
  '1200 1040 0:90 / /home/jovyan/config ro,relatime - tmpfs tmpfs rw,size=65536k';
const WSL_C =
  '95 70 0:64 / /mnt/c rw,noatime - 9p drvfs rw,dirsync,aname=drvfs;path=C:\\134;uid=1000;gid=1000;symlinkroot=/mnt/,mmap,access=client,msize=65536,trans=fd,rfd=5,wfd=5';
const NTFS_FUSEBLK =
  '512 27 8:17 / /media/alice/USB\\040DISK rw,nosuid,nodev,relatime shared:300 - fuseblk /dev/sdb1 rw,user_id=0,group_id=0,default_permissions,allow_other,blksize=4096';
const CEPH_PROJECTS =
  '600 1040 0:70 /volumes/csi/csi-vol-1/2 /home/jovyan/projects rw,relatime shared:400 propagate_from:12 - ceph 10.0.0.1:6789,10.0.0.2:6789:/volumes/csi/csi-vol-1/2 rw,name=csi-user,secret=<hidden>,fsid=00000000,acl,mds_namespace=fs';
const TRICKY_NAMES =
  '700 1040 0:80 / /home/jovyan/a\\011tab\\012newline\\134backslash rw - nfs server:/x\\040y rw';

describe('parseMountInfo', () => {
  it('reads the fields of the proc(5) example', () => {
    expect(parseMountInfo(PROC5_EXAMPLE)).toEqual([
      {
        mountId: 36,
        parentId: 35,
        device: '98:0',
        root: '/mnt1',
        mountPoint: '/mnt2',
        options: 'rw,noatime',
        optionalFields: ['master:1'],
        fsType: 'ext3',
        source: '/dev/root',
        superOptions: 'rw,errors=continue'
      }
    ]);
  });

  it('finds the fields after any number of optional fields, including none', () => {
    const [ceph, wsl, home] = parseMountInfo([CEPH_PROJECTS, WSL_C, HOME_EXT4].join('\n'));
    expect(ceph.optionalFields).toEqual(['shared:400', 'propagate_from:12']);
    expect(ceph.fsType).toBe('ceph');
    expect(ceph.root).toBe('/volumes/csi/csi-vol-1/2');
    expect(ceph.source).toBe('10.0.0.1:6789,10.0.0.2:6789:/volumes/csi/csi-vol-1/2');
    expect(wsl.optionalFields).toEqual([]);
    expect(wsl.fsType).toBe('9p');
    expect(wsl.superOptions).toContain('path=C:\\;');
    expect(home.optionalFields).toEqual([]);
    expect(home.mountPoint).toBe('/home/jovyan');
  });

  it('unescapes octal escapes in paths and sources', () => {
    const [cifs, tricky, usb] = parseMountInfo([TEAM_CIFS, TRICKY_NAMES, NTFS_FUSEBLK].join('\n'));
    expect(cifs.mountPoint).toBe('/home/jovyan/team share');
    expect(cifs.source).toBe('//fileserver/team share');
    expect(tricky.mountPoint).toBe('/home/jovyan/a\ttab\nnewline\\backslash');
    expect(tricky.source).toBe('server:/x y');
    expect(usb.mountPoint).toBe('/media/alice/USB DISK');
    expect(unescapeMountField('no\\escapes\\here')).toBe('no\\escapes\\here');
  });

  it('skips blank and malformed lines', () => {
    const text = [
      '',
      'garbage',
      '1 2 3 4 5 6 7',
      `${PROC5_EXAMPLE}\n`,
      'x y 0:1 / /m rw - ext4 a b'
    ].join('\n');
    expect(parseMountInfo(text).map(mount => mount.mountId)).toEqual([36]);
  });

  it('parses this machine’s own mountinfo', async () => {
    if (process.platform !== 'linux') return;
    const mounts = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
    expect(mounts.some(mount => mount.mountPoint === '/')).toBe(true);
    for (const mount of mounts) expect(mount.fsType).not.toBe('');
  });
});

describe('classification', () => {
  it.each([
    ['nfs', 'an NFS mount'],
    ['nfs4', 'an NFS mount'],
    ['cifs', 'an SMB/CIFS mount'],
    ['smb3', 'an SMB/CIFS mount'],
    ['fuse.sshfs', 'a FUSE mount (sshfs)'],
    ['fuse.gcsfuse', 'a FUSE mount (gcsfuse)'],
    ['fuse', 'a FUSE mount'],
    ['9p', 'a 9p mount (a host or VM share)'],
    ['virtiofs', 'a virtiofs mount (a host share)'],
    ['ceph', 'a CephFS mount'],
    ['glusterfs', 'a GlusterFS mount'],
    ['lustre', 'a Lustre mount'],
    ['vboxsf', 'a VirtualBox shared folder']
  ])('%s is remote', (type, label) => {
    expect(remoteKindByName(type)?.label).toBe(label);
  });

  it.each(['ext4', 'xfs', 'btrfs', 'zfs', 'tmpfs', 'overlay', 'fuseblk', 'fuse.lxcfs', 'proc'])(
    '%s is local',
    type => {
      expect(remoteKindByName(type)).toBeNull();
    }
  );

  it.each([
    ['0x6969', 'an NFS mount'],
    ['0xff534d42', 'an SMB/CIFS mount'],
    ['0xfe534d42', 'an SMB/CIFS mount'],
    ['0x517b', 'an SMB/CIFS mount'],
    ['0x65735546', 'a FUSE mount'],
    ['0x01021997', 'a 9p mount (a host or VM share)'],
    ['0x00c36400', 'a CephFS mount']
  ])('statfs type %s is remote', (magic, label) => {
    expect(remoteKindByMagic(Number(magic))?.label).toBe(label);
    expect(remoteKindByMagic(BigInt(magic))?.label).toBe(label);
  });

  it.each(['0xef53', '0x58465342', '0x9123683e', '0x01021994', '0x794c7630'])(
    'statfs type %s is local (ext4, xfs, btrfs, tmpfs, overlay)',
    magic => {
      expect(remoteKindByMagic(Number(magic))).toBeNull();
    }
  );
});

describe('detectBlindSpots', () => {
  const EXT4 = 0xef53;
  const mountInfo = [
    CONTAINER_ROOT,
    HOME_EXT4,
    SHARED_NFS,
    TEAM_CIFS,
    REMOTE_SSHFS,
    CACHE_GCSFUSE,
    CONFIG_TMPFS,
    CEPH_PROJECTS,
    WSL_C
  ].join('\n');
  const local = () => Promise.resolve({ type: EXT4 });
  const options = { statfs: local, mountInfo, platform: 'linux' as const };

  it('reports network and FUSE mounts below a local root, with API paths, not in ignored folders', async () => {
    const spots = await detectBlindSpots('/home/jovyan', options);
    expect(spots.map(spot => spot.path)).toEqual([
      'projects',
      'shared',
      'team share',
      'work/remote'
    ]);
    const shared = spots.find(spot => spot.path === 'shared')!;
    expect(shared.reason).toBe(
      '/shared is an NFS mount (type nfs4, from 10.0.0.5:/exports/shared): inotify does not see writes by other clients'
    );
    expect(spots.find(spot => spot.path === 'work/remote')!.reason).toMatch(
      /^\/work\/remote is a FUSE mount \(sshfs\)/
    );
  });

  it('leaves out local mounts and mounts outside the root', async () => {
    const spots = await detectBlindSpots('/home/jovyan/work', options);
    expect(spots.map(spot => spot.path)).toEqual(['remote']);
  });

  it('reports the root itself when statfs says NFS, naming the mount that holds it', async () => {
    const spots = await detectBlindSpots('/home/jovyan/shared/analysis', {
      ...options,
      statfs: () => Promise.resolve({ type: 0x6969 })
    });
    expect(spots).toEqual([
      {
        path: '',
        reason:
          'the root /home/jovyan/shared/analysis is on an NFS mount (mounted at /home/jovyan/shared, type nfs4): inotify does not see writes by other clients'
      }
    ]);
  });

  it('reports the root from statfs alone when mountinfo cannot be read', async () => {
    const spots = await detectBlindSpots('/data', {
      statfs: () => Promise.resolve({ type: 0xfe534d42 }),
      mountInfo: () => Promise.reject(new Error('EACCES')),
      platform: 'linux'
    });
    expect(spots).toHaveLength(1);
    expect(spots[0].path).toBe('');
    expect(spots[0].reason).toContain('an SMB/CIFS mount (statfs type 0xfe534d42)');
  });

  it('reports the root from mountinfo when statfs fails', async () => {
    const spots = await detectBlindSpots('/home/jovyan/projects/x', {
      ...options,
      statfs: () => Promise.reject(new Error('ENOENT'))
    });
    expect(spots.map(spot => spot.path)).toEqual(['']);
    expect(spots[0].reason).toContain('a CephFS mount (mounted at /home/jovyan/projects');
  });

  it('does not report a FUSE root that is a local disk (fuseblk)', async () => {
    const spots = await detectBlindSpots('/media/alice/USB DISK/notebooks', {
      statfs: () => Promise.resolve({ type: 0x65735546 }),
      mountInfo: [CONTAINER_ROOT, NTFS_FUSEBLK].join('\n'),
      platform: 'linux'
    });
    expect(spots).toEqual([]);
  });

  it('reports a WSL drive (9p) as the root', async () => {
    const spots = await detectBlindSpots('/mnt/c/Users/alice', {
      statfs: () => Promise.resolve({ type: 0x01021997 }),
      mountInfo: [CONTAINER_ROOT, WSL_C].join('\n'),
      platform: 'linux'
    });
    expect(spots[0].reason).toContain(
      'a 9p mount (a host or VM share) (mounted at /mnt/c, type 9p)'
    );
    expect(spots[0].reason).toContain('changes made on the host');
  });

  it('takes the last mount on a mount point (it hides the earlier ones)', async () => {
    const overNfs = '1300 1101 0:99 / /home/jovyan/shared rw - tmpfs tmpfs rw';
    const spots = await detectBlindSpots('/home/jovyan', {
      ...options,
      mountInfo: [HOME_EXT4, SHARED_NFS, overNfs].join('\n')
    });
    expect(spots).toEqual([]);
  });

  it('handles / as the root', async () => {
    const spots = await detectBlindSpots('/', {
      ...options,
      mountInfo: [CONTAINER_ROOT, WSL_C].join('\n')
    });
    expect(spots.map(spot => spot.path)).toEqual(['mnt/c']);
  });

  it('finds nothing elsewhere than Linux unless told', async () => {
    expect(await detectBlindSpots('/Users/alice', { platform: 'darwin' })).toEqual([]);
  });

  it('finds nothing to report on this machine’s temporary folder (a local disk)', async () => {
    if (process.platform !== 'linux') return;
    const dir = await mkdtemp(join(tmpdir(), 'blind-'));
    try {
      const spots = await detectBlindSpots(dir);
      expect(spots.filter(spot => spot.path === '')).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
