import forge from 'node-forge';
import type { KeyPair } from '../src/certs/index.js';

/** A client certificate (clientAuth) with common name `cn`, signed by `ca`: what an apiserver presents to a webhook. */
export function createClientCert(ca: KeyPair, cn: string): KeyPair {
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '02';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.key), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}
