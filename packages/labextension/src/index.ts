import { hubLandingPlugin } from './hubLanding';
import { storePlugin } from './plugin';

export * from './archiveStatus';
export * from './request';
export * from './storeClient';
export * from './tokens';

export default [storePlugin, hubLandingPlugin];
