import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';

/** The certificate a TLS server on 127.0.0.1:`port` presents to a new connection. */
export function servedCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.on('error', reject);
  });
}

export { createClientCert } from '../../bench/client-cert.js';
