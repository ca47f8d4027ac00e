// Entry of the outbound thread (threaded-outbound.ts). Worker threads do not inherit the loader
// that bin/rewards.js registers for TypeScript, so it is registered here before the body loads.
import { register } from 'tsx/esm/api';

register();
await import('./outbound-thread.ts');
