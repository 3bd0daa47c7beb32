import { ObjectStoreError } from '../../src/storage/objectStore';

/** The ObjectStoreError a call fails with; fails the test if it succeeds or throws anything else. */
export async function failure(call: Promise<unknown>): Promise<ObjectStoreError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ObjectStoreError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}
