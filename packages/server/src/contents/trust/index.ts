/**
 * Notebook trust shared with Jupyter: nbformat's notary (secret, HMAC, signature database) and the
 * Jupyter data directory it lives in.
 */
export {
  NOTARY_ALGORITHMS,
  NotebookNotary,
  NotebookSignatureError,
  pythonTruthy,
  walkJson,
  walkNotebook,
  type ICanonicalSink
} from './notary';
export { CachingSignatureStore } from './cachingStore';
export {
  DEFAULT_CACHE_SIZE,
  MemorySignatureStore,
  SQLiteSignatureStore,
  SignatureStoreBusyError,
  pythonUtcIsoformat,
  type ISignature,
  type ISignatureStore
} from './signatureStore';
export { WorkerSignatureStore, signatureWorkerFile } from './workerStore';
export {
  ensureJupyterDir,
  envSet,
  jupyterConfigDir,
  jupyterDataDir,
  jupyterHomeDir,
  type IJupyterPathContext
} from './paths';
