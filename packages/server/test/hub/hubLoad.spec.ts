/**
 * The load test's verdict on one user's archive (`archiveProblems`): what it must catch, so
 * that a lost, reordered or misplaced save fails the load test rather than passing unseen.
 */
import {
  archiveProblems,
  loadSaveBody,
  type IArchivedSave,
  type ISaveOutcome
} from '../support/hubLoad';

const KEY = 'workspace/ann/load.ipynb';

function saves(statuses: readonly number[]): ISaveOutcome[] {
  return statuses.map((status, index) => ({
    user: 'ann',
    seq: index + 1,
    sentAt: index * 2000,
    answeredAt: index * 2000 + 10,
    status
  }));
}

function versions(seqs: readonly number[], key = KEY, user = 'ann'): IArchivedSave[] {
  return seqs.map(seq => ({
    key,
    versionId: `v${seq}`,
    lastModified: seq * 2000,
    size: 100,
    user,
    seq
  }));
}

test('every acknowledged save archived in order is no problem', () => {
  expect(archiveProblems('ann', KEY, saves([201, 200, 200]), versions([1, 2, 3]))).toEqual([]);
});

test('a save that was not acknowledged may be archived or not', () => {
  expect(archiveProblems('ann', KEY, saves([201, 0, 200]), versions([1, 3]))).toEqual([]);
  expect(archiveProblems('ann', KEY, saves([201, 503, 200]), versions([1, 2, 3]))).toEqual([]);
});

test('a lost acknowledged save is a problem', () => {
  expect(archiveProblems('ann', KEY, saves([201, 200, 200]), versions([1, 3]))).toEqual([
    'ann: acknowledged saves not archived: 2'
  ]);
  expect(archiveProblems('ann', KEY, saves([201, 200]), versions([1]))).toEqual([
    'ann: acknowledged saves not archived: 2'
  ]);
});

test('saves archived out of order, twice, or never sent are problems', () => {
  expect(archiveProblems('ann', KEY, saves([201, 200, 200]), versions([1, 3, 2]))).toEqual([
    'ann: save 2 archived after 3'
  ]);
  expect(archiveProblems('ann', KEY, saves([201, 200]), versions([1, 2, 2]))).toEqual([
    'ann: save 2 archived after 2'
  ]);
  expect(archiveProblems('ann', KEY, saves([201]), versions([1, 7]))).toEqual([
    'ann: versions of saves never sent: 7'
  ]);
});

test('another user’s save, or a save under another key, is a problem', () => {
  expect(archiveProblems('ann', KEY, saves([201]), versions([1], KEY, 'bob'))).toEqual([
    `ann: ${KEY} (v1) holds bob's save`,
    'ann: acknowledged saves not archived: 1'
  ]);
  expect(
    archiveProblems('ann', KEY, saves([201]), versions([1], 'workspace/bob/load.ipynb'))
  ).toEqual([
    "ann: workspace/bob/load.ipynb (v1) holds ann's save",
    'ann: acknowledged saves not archived: 1'
  ]);
});

test('each save carries its user and sequence number in the notebook', () => {
  const body = JSON.parse(loadSaveBody('ann', 42, 100)) as {
    content: { metadata: Record<string, unknown>; cells: Array<{ source: string }> };
  };
  expect(body.content.metadata.jupyter_store_load).toEqual({ user: 'ann', seq: 42 });
  expect(body.content.cells[0].source.length).toBeGreaterThanOrEqual(100);
});
