/**
 * The TLS-terminating proxy of test/support/tls-proxy.ts as a process, for the Python
 * client's tests: makes a PKI, starts an mTLS proxy in front of TEMPORAL_ADDRESS, prints one
 * JSON line ({ address, caCert, otherCaCert, clientCert, clientKey }), and when its stdin
 * closes prints its ledger ({ accepted, refused }) and exits.
 *
 *   node --import tsx test/support/tls-proxy-cli.ts
 */
import { makeTestPki, startTlsProxy } from './tls-proxy';

async function main(): Promise<void> {
  const target = process.env.TEMPORAL_ADDRESS;
  if (!target) throw new Error('TEMPORAL_ADDRESS is not set');
  const pki = makeTestPki();
  const proxy = await startTlsProxy(pki, target, { requireClientCert: true });
  const { caCert, otherCaCert, clientCert, clientKey } = pki;
  process.stdout.write(`${JSON.stringify({ address: proxy.address, caCert, otherCaCert, clientCert, clientKey })}\n`);
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.on('end', resolve).on('close', resolve));
  process.stdout.write(`${JSON.stringify({ accepted: proxy.accepted, refused: proxy.refused })}\n`);
  await proxy.close();
  pki.remove();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
