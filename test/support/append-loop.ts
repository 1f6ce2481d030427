/**
 * The TypeScript side of the Python client's cross-language test: appends to one session
 * with SessionsClient (configured from the environment) until its stdin closes, printing
 * one line per acknowledged append, `acked <marker>`, then `done <count>`.
 *
 *   node --import tsx test/support/append-loop.ts <sessionId>
 */
import { SessionsClient } from '../../src/client';

async function main(): Promise<void> {
  const sessionId = process.argv[2];
  if (!sessionId) throw new Error('usage: append-loop.ts <sessionId>');
  const client = await SessionsClient.connect();
  let writing = true;
  process.stdin.on('end', () => (writing = false)).on('close', () => (writing = false));
  process.stdin.resume();
  let acked = 0;
  const writer = async (w: number) => {
    for (let n = 0; writing; n++) {
      const marker = `ts${w}-${n}`;
      await client.append(sessionId, [
        { role: 'user', content: `${marker} please continue` },
        { role: 'assistant', content: `ack ${marker}` },
      ]);
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
