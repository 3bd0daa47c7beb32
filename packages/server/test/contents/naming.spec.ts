import { copySourceName, incrementName, splitForCounter } from '../../src/contents/naming';

const takenIn = (names: string[]) => async (candidate: string) => names.includes(candidate);

describe('naming', () => {
  describe('#splitForCounter()', () => {
    it('puts the counter before the first dot for files', () => {
      expect(splitForCounter('a.tar.gz')).toEqual({ stem: 'a', suffix: '.tar.gz' });
    });
    it('puts the counter before the last dot for notebooks', () => {
      expect(splitForCounter('my.analysis.ipynb')).toEqual({
        stem: 'my.analysis',
        suffix: '.ipynb'
      });
    });
    it('has no suffix without a dot', () => {
      expect(splitForCounter('Untitled Folder')).toEqual({ stem: 'Untitled Folder', suffix: '' });
    });
  });

  describe('#incrementName()', () => {
    it('keeps a free name as it is', async () => {
      expect(await incrementName('Untitled.ipynb', takenIn([]))).toBe('Untitled.ipynb');
    });
    it('counts from 1 without a separator', async () => {
      expect(
        await incrementName('Untitled.ipynb', takenIn(['Untitled.ipynb', 'Untitled1.ipynb']))
      ).toBe('Untitled2.ipynb');
      expect(await incrementName('a.tar.gz', takenIn(['a.tar.gz']))).toBe('a1.tar.gz');
    });
    it('inserts a space for folders and -Copy for copies', async () => {
      expect(await incrementName('Untitled Folder', takenIn(['Untitled Folder']), ' ')).toBe(
        'Untitled Folder 1'
      );
      expect(await incrementName('a.ipynb', takenIn(['a.ipynb', 'a-Copy1.ipynb']), '-Copy')).toBe(
        'a-Copy2.ipynb'
      );
    });
  });

  describe('#copySourceName()', () => {
    it('drops an existing -Copy marker so copies do not stack', () => {
      expect(copySourceName('a-Copy2.ipynb')).toBe('a.ipynb');
      expect(copySourceName('a-Copy.txt')).toBe('a.txt');
      expect(copySourceName('a.ipynb')).toBe('a.ipynb');
    });
  });
});
