/** A drizzle database or an open transaction on it: what every data-layer function takes. */
import type { Database } from './database';

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];
export type Executor = Database | Tx;
