import { X509Certificate } from 'node:crypto';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** The PEM certificates in `text`, in order. */
export function splitPem(text: string | undefined): string[] {
  return text ? [...text.matchAll(PEM_CERTIFICATE)].map((m) => `${m[0].trim()}\n`) : [];
}

export const joinPem = (pems: string[]): string => pems.join('');

function parse(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

export function fingerprintOf(pem: string): string | undefined {
  return parse(pem)?.fingerprint256;
}

/**
 * The CA certificates among `pems` still worth trusting at `now`: parseable, CAs, not
 * expired; duplicates dropped, first occurrence kept. An old CA stays in the bundle until
 * it expires, so a certificate it signed keeps working through a CA rotation.
 */
export function trustedBundle(pems: string[], now = new Date()): string[] {
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const pem of pems) {
    const cert = parse(pem);
    if (!cert || !cert.ca || Date.parse(cert.validTo) <= now.getTime() || seen.has(cert.fingerprint256)) continue;
    seen.add(cert.fingerprint256);
    kept.push(pem);
  }
  return kept;
}

/** True when the PEM bundle holds the certificate `caPem`. */
export function bundleCarries(bundle: string, caPem: string): boolean {
  const wanted = fingerprintOf(caPem);
  return wanted !== undefined && splitPem(bundle).some((pem) => fingerprintOf(pem) === wanted);
}
