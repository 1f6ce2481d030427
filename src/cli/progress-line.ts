/** The progress line `sessions compact` draws on a terminal while it waits. */
import { formatProgress } from '../client/progress';
import type { SessionsClient } from '../client/sessions-client';

/** Where `compact` draws its progress line: only a terminal, and never with --json. */
export interface ProgressSink {
  write(line: string): void;
  clear(): void;
}

const PROGRESS_POLL_MS = 500;

export function terminalProgress(stream: NodeJS.WriteStream): ProgressSink {
  return {
    write: (line) => stream.write(`\r\x1b[2K${line}`),
    clear: () => stream.write('\r\x1b[2K'),
  };
}

/** Runs `work`, showing the compaction's progress on `sink` every half second until it settles. */
export async function withProgress<T>(client: SessionsClient, sessionId: string, sink: ProgressSink | undefined, work: Promise<T>): Promise<T> {
  if (!sink) return work;
  let done = false;
  const settled = work.finally(() => {
    done = true;
  });
  const poll = (async () => {
    while (!done) {
      await Promise.race([settled.catch(() => undefined), new Promise((r) => setTimeout(r, PROGRESS_POLL_MS))]);
      if (done) break;
      // Progress is best effort: a failed read never fails the compaction.
      const progress = await client.operator.progress(sessionId).catch(() => undefined);
      if (!done) sink.write(`compacting ${sessionId}: ${formatProgress(progress)}`);
    }
  })();
  try {
    return await settled;
  } finally {
    await poll;
    sink.clear();
  }
}
