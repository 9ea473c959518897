import { isIP } from 'node:net';
import forge from 'node-forge';

export interface KeyPair {
  /** PEM certificate. */
  cert: string;
  /** PEM private key. */
  key: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function randomSerial(): string {
  // Positive 16-byte serial (RFC 5280 allows up to 20 octets).
  const bytes = forge.random.getBytesSync(16);
  return `01${forge.util.bytesToHex(bytes).slice(2)}`;
}

function newCertificate(commonName: string, validDays: number, now: Date): { cert: forge.pki.Certificate; keys: forge.pki.rsa.KeyPair } {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  // Backdated a little: clocks in a cluster are rarely in perfect agreement.
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000);
  cert.validity.notAfter = new Date(now.getTime() + validDays * DAY_MS);
  cert.setSubject([
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'spec-guard' },
  ]);
  return { cert, keys };
}

/** A self-signed CA for the webhook (10 years by default). */
export function createCA(commonName = 'spec-guard-ca', validDays = 3650, now = new Date()): KeyPair {
  const { cert, keys } = newCertificate(commonName, validDays, now);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** A serving certificate for `hosts` (DNS names or IPs), signed by `ca` (1 year by default). */
export function createServingCert(ca: KeyPair, hosts: string[], validDays = 365, now = new Date()): KeyPair {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one host');
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const caKey = forge.pki.privateKeyFromPem(ca.key);
  const { cert, keys } = newCertificate(hosts[0]!, validDays, now);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })) },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}
