/**
 * The Temporal dev server speaks only plaintext, so TLS is tested through this: a local
 * TLS-terminating TCP proxy (node `tls` in front, `net` to the dev server) with certificates
 * made by openssl for the test. It keeps its own ledger of handshakes: which client
 * certificate each accepted connection presented, and which handshakes it refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

export interface TestPki {
  dir: string;
  caCert: string;
  /** A second CA that signed nothing the proxy uses: the wrong CA. */
  otherCaCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate signed by the other CA: the proxy does not trust it. */
  strangerCert: string;
  strangerKey: string;
  remove(): void;
}

function openssl(dir: string, args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA, a server certificate for localhost/127.0.0.1, client certificates; all in a temp dir. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sc-pki-'));
  const ca = (name: string) => {
    openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`]);
  };
  const leaf = (name: string, caName: string, ext: string) => {
    openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
    writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${caName}.crt`,
      '-CAkey',
      `${caName}.key`,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ]);
  };
  ca('test-ca');
  ca('other-ca');
  leaf('server', 'test-ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'test-ca', 'extendedKeyUsage=clientAuth\n');
  leaf('stranger', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  const p = (file: string) => path.join(dir, file);
  return {
    dir,
    caCert: p('test-ca.crt'),
    otherCaCert: p('other-ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    strangerCert: p('stranger.crt'),
    strangerKey: p('stranger.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface TlsProxy {
  /** host:port of the TLS side. */
  address: string;
  /** Common names of the client certificates of accepted connections, in order. */
  accepted: string[];
  /** Errors of refused handshakes, in order. */
  refused: string[];
  close(): Promise<void>;
}

export async function startTlsProxy(pki: TestPki, target: string, options: { requireClientCert: boolean }): Promise<TlsProxy> {
  const [targetHost, targetPort] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const accepted: string[] = [];
  const refused: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = tls.createServer(
    {
      cert: readFileSync(pki.serverCert),
      key: readFileSync(pki.serverKey),
      ca: readFileSync(pki.caCert),
      requestCert: options.requireClientCert,
      rejectUnauthorized: options.requireClientCert,
      ALPNProtocols: ['h2'],
    },
    (secure) => {
      const peer = secure.getPeerCertificate();
      accepted.push(peer && peer.subject ? String(peer.subject.CN) : '(no client certificate)');
      const upstream = net.connect(targetPort, targetHost);
      sockets.add(secure).add(upstream);
      const drop = () => {
        secure.destroy();
        upstream.destroy();
        sockets.delete(secure);
        sockets.delete(upstream);
      };
      secure.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      secure.pipe(upstream).pipe(secure);
    },
  );
  server.on('tlsClientError', (error) => refused.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    accepted,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
