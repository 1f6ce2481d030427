/**
 * What SessionsClient and OperatorClient share: the configuration, the Temporal client (with
 * the payload codec and tracing) and the database, opened once; and how either reports a
 * failure to its caller.
 */
import { Client, type Connection } from '@temporalio/client';
import { encryptedDataConverter, payloadKeysMissing } from '../codec/aes-gcm-codec';
import { type Config, loadConfig } from '../config';
import { type DatabaseHandle, openDatabase } from '../db/database';
import { typedDatabaseError } from '../db/postgres-errors';
import { clientTracingInterceptors, installTracingFromConfig } from '../tracing';
import { lazyClientConnection } from './lineage-workflow';

export interface ClientCore {
  config: Config;
  temporal: Client;
  database: DatabaseHandle;
}

export interface ClientCoreOptions {
  config?: Config;
  /** A Temporal connection the caller owns (and closes). */
  connection?: Connection;
  /** A database the caller owns (and closes). */
  database?: DatabaseHandle;
}

/** The connections a client opened itself, so it closes them (not the ones it was given). */
export interface OwnedConnections {
  connection?: Connection;
  database?: DatabaseHandle;
}

/** Opens the configured connections (Temporal lazily) that `options` does not give. */
export function connectCore(options: ClientCoreOptions): ClientCore & { owned: OwnedConnections } {
  const config = options.config ?? loadConfig();
  // Lazy: the commands that read only Postgres (transcript, lineage, list, history, audit) work while Temporal is down.
  const connection = options.connection ?? lazyClientConnection(config.temporal);
  const database = options.database ?? openDatabase(config.databaseUrl);
  const encrypted = encryptedDataConverter(config.payloadEncryptionKeys, config.temporal.namespace);
  installTracingFromConfig(config);
  const tracing = clientTracingInterceptors();
  const temporal = new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(encrypted ? { dataConverter: encrypted } : {}),
    ...(tracing ? { interceptors: { workflow: tracing } } : {}),
  });
  return { config, temporal, database, owned: { connection: options.connection ? undefined : connection, database: options.database ? undefined : database } };
}

/** Closes what the client opened itself. */
export async function closeOwned(owned: OwnedConnections): Promise<void> {
  await owned.database?.close();
  await owned.connection?.close();
}

/**
 * What a caller of the library sees of a failure: an answer it cannot read for want of payload
 * keys as a PayloadKeysMissingError; a database failure as a typed error that carries no
 * statement parameter (src/db/postgres-errors.ts: drizzle's own error holds the whole appended batch);
 * every other error as it is.
 */
function callerError(error: unknown, databaseUrl: string): unknown {
  return payloadKeysMissing(error) ?? typedDatabaseError(error, databaseUrl);
}

/** Makes every method of `prototype` fail through callerError, whichever statement or call it came from. */
export function withCallerErrors<T extends object>(prototype: T, databaseUrlOf: (self: T) => string): void {
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
    if (name === 'constructor' || typeof descriptor?.value !== 'function') continue;
    const method = descriptor.value as (this: T, ...args: unknown[]) => unknown;
    Object.defineProperty(prototype, name, {
      ...descriptor,
      value(this: T, ...args: unknown[]): unknown {
        const databaseUrl = databaseUrlOf(this);
        try {
          const result = method.apply(this, args);
          return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(callerError(error, databaseUrl))) : result;
        } catch (error) {
          throw callerError(error, databaseUrl);
        }
      },
    });
  }
}
