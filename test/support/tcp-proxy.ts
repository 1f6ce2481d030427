/**
 * A TCP proxy a test can pause: while paused it holds the bytes clients send (nothing reaches
 * the server), so a process using it stalls at its next statement, exactly where a test wants.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  pause(): void;
  resume(): void;
  /** Bytes clients sent while paused, not yet forwarded. */
  held(): number;
  /** Bytes the server sent back to clients since the proxy started. */
  returned(): number;
  /** Breaks every open connection (held bytes dropped, never sent) and forwards again; new connections are served. Returns how many it broke. */
  cut(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let paused = false;
  let heldBytes = 0;
  let returnedBytes = 0;
  const waiting: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const forward = (chunk: Buffer) => {
      if (!paused) {
        upstream.write(chunk);
        return;
      }
      heldBytes += chunk.length;
      waiting.push(() => upstream.write(chunk));
    };
    client.on('data', forward);
    upstream.on('data', (chunk: Buffer) => {
      returnedBytes += chunk.length;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    pause: () => void (paused = true),
    resume() {
      paused = false;
      heldBytes = 0;
      for (const send of waiting.splice(0)) send();
    },
    held: () => heldBytes,
    cut() {
      const broken = [...sockets].filter((socket) => !socket.destroyed).length / 2;
      waiting.length = 0;
      heldBytes = 0;
      paused = false;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      return broken;
    },
    returned: () => returnedBytes,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
