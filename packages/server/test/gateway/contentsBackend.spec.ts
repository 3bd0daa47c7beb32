import {
  decideContentsBackend,
  type IUpstreamDescription
} from '../../src/gateway/contentsBackend';

const STOCK: IUpstreamDescription = {
  contents_manager_class: 'jupyter_server.services.contents.largefilemanager.AsyncLargeFileManager',
  contents_manager_is_stock: true,
  pre_save_hook: false,
  post_save_hook: false,
  extensions: { jupyterlab: true, jupyter_server_terminals: true, jupyter_lsp: true }
};

describe('decideContentsBackend()', () => {
  it('keeps an explicit setting whatever the upstream loads', () => {
    expect(decideContentsBackend('node', { ...STOCK, post_save_hook: true })).toMatchObject({
      backend: 'node',
      setting: 'node'
    });
    expect(decideContentsBackend('jupyter', STOCK)).toMatchObject({ backend: 'jupyter' });
  });

  it('picks node for the stock manager with no hooks and no contents extension', () => {
    expect(decideContentsBackend('auto', STOCK)).toMatchObject({ backend: 'node' });
  });

  it.each([
    [
      {
        contents_manager_class: 'jupyterfs.metamanager.MetaManager',
        contents_manager_is_stock: false
      },
      /MetaManager/
    ],
    [{ pre_save_hook: true }, /pre_save_hook/],
    [{ post_save_hook: true }, /post_save_hook/],
    [{ extensions: { ...STOCK.extensions, jupyter_server_ydoc: true } }, /collaboration/],
    [{ extensions: { ...STOCK.extensions, jupyterlab_jupytext: true } }, /jupytext/],
    [
      { extensions: { ...STOCK.extensions, jupyter_server_documents: true } },
      /jupyter-server-documents/
    ]
  ])('picks jupyter when the upstream has %p, and says so', (change, reason) => {
    const choice = decideContentsBackend('auto', { ...STOCK, ...change });
    expect(choice.backend).toBe('jupyter');
    expect(choice.reason).toMatch(reason);
  });

  it('ignores a contents extension that is installed but disabled', () => {
    const choice = decideContentsBackend('auto', {
      ...STOCK,
      extensions: { ...STOCK.extensions, jupyter_server_ydoc: false }
    });
    expect(choice.backend).toBe('node');
  });

  it('picks jupyter when the upstream cannot say what it loads', () => {
    const choice = decideContentsBackend('auto', 'GET api/store-upstream answered 404');
    expect(choice).toMatchObject({ backend: 'jupyter', setting: 'auto' });
    expect(choice.reason).toMatch(/404/);
  });
});
