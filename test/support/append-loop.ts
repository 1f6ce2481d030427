/**
 * The TypeScript side of the Python client's cross-language test: appends to one session
 * with SessionsClient (configured from the environment) until its stdin closes, printing
 * one line per acknowledged append, `acked <marker>`, then `done <count>`.
 *
 * With `--report-refusals`, an append refused with one of the service's typed errors (a
 * SessionCompactionError: the lineage closed or erased meanwhile) prints `refused <name>
 * <marker>` and the writer tries again 20 ms later, until stdin closes; without it (and for
 * any other error) the process fails on the first error.
 *
 *   node --import tsx test/support/append-loop.ts <sessionId> [--report-refusals]
 */
import { SessionCompactionError, SessionsClient } from '../../src/client';

async function main(): Promise<void> {
  const sessionId = process.argv[2];
  if (!sessionId) throw new Error('usage: append-loop.ts <sessionId> [--report-refusals]');
  const reportRefusals = process.argv.slice(3).includes('--report-refusals');
  const client = await SessionsClient.connect();
  let writing = true;
  process.stdin.on('end', () => (writing = false)).on('close', () => (writing = false));
  process.stdin.resume();
  let acked = 0;
  const writer = async (w: number) => {
    for (let n = 0; writing; n++) {
      const marker = `ts${w}-${n}`;
      try {
        await client.append(sessionId, [
          { role: 'user', content: `${marker} please continue` },
          { role: 'assistant', content: `ack ${marker}` },
        ]);
      } catch (error) {
        if (!reportRefusals || !(error instanceof SessionCompactionError)) throw error;
        process.stdout.write(`refused ${error.name} ${marker}\n`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      acked++;
      process.stdout.write(`acked ${marker}\n`);
    }
  };
  process.stdout.write('ready\n');
  await Promise.all([0, 1].map(writer));
  process.stdout.write(`done ${acked}\n`);
  await client.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
