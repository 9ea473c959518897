import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

/** Why a serving certificate cannot be used as it is, or undefined when it can. */
export function servingCertProblem(certPem: string, caPem: string, hosts: string[], now = new Date()): string | undefined {
  let cert: X509Certificate;
  let ca: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    ca = new X509Certificate(caPem);
  } catch (err) {
    return `unparseable certificate: ${(err as Error).message}`;
  }
  if (!cert.verify(ca.publicKey)) return 'not signed by the CA';
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  // Renewed when a third of its life is left.
  if (now.getTime() > to - (to - from) / 3) return `expires ${cert.validTo}, within a third of its life`;
  const missing = hosts.filter((h) => (isIP(h) ? !cert.checkIP(h) : !cert.checkHost(h)));
  if (missing.length) return `does not cover ${missing.join(', ')}`;
  return undefined;
}

export function expiryOf(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}
