/** The Claude Agent SDK adapter: its `SessionStore` over lineages (./session-store.ts). */
export { LineageSessionStore, type LineageSessionStoreOptions } from './session-store';
