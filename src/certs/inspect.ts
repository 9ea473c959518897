import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import type { KeyPair } from './generate.js';

/**
 * What is wrong with a certificate: `unusable` when it cannot serve at all (replace it at
 * once, whoever notices), `renew` when it works but is due for renewal (the leader's job).
 */
export interface CertVerdict {
  unusable?: string;
  renew?: string;
}

/** Renewal thresholds: the part of the certificate's life left when it is renewed. */
const SERVING_RENEW_FRACTION = 1 / 3;
const CA_RENEW_FRACTION = 1 / 5;

function parsePair(pair: KeyPair | undefined): { cert: X509Certificate } | { problem: string } {
  if (!pair) return { problem: 'missing' };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.cert);
  } catch (err) {
    return { problem: `unparseable certificate (${(err as Error).message})` };
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(pair.key))) return { problem: 'the private key does not match the certificate' };
  } catch (err) {
    return { problem: `unparseable private key (${(err as Error).message})` };
  }
  return { cert };
}

function lifeVerdict(cert: X509Certificate, fraction: number, now: Date): CertVerdict {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now.getTime() >= to) return { unusable: `expired ${cert.validTo}` };
  if (now.getTime() < from) return { unusable: `not valid before ${cert.validFrom}` };
  if (now.getTime() > to - (to - from) * fraction) return { renew: `expires ${cert.validTo}, within the last ${fraction === CA_RENEW_FRACTION ? 'fifth' : 'third'} of its life` };
  return {};
}

export function caVerdict(pair: KeyPair | undefined, now = new Date()): CertVerdict {
  const parsed = parsePair(pair);
  if ('problem' in parsed) return { unusable: parsed.problem };
  if (!parsed.cert.ca) return { unusable: 'not a CA certificate' };
  return lifeVerdict(parsed.cert, CA_RENEW_FRACTION, now);
}

/**
 * The serving certificate judged against the trusted `bundle` (any CA in it makes it
 * usable) and the current CA `caPem` (signed by another one: due for renewal).
 */
export function servingVerdict(pair: KeyPair | undefined, bundle: string[], caPem: string, hosts: string[], now = new Date()): CertVerdict {
  const parsed = parsePair(pair);
  if ('problem' in parsed) return { unusable: parsed.problem };
  const { cert } = parsed;
  const issuers = bundle.map((pem) => new X509Certificate(pem));
  if (!issuers.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) return { unusable: 'not signed by a trusted CA' };
  const life = lifeVerdict(cert, SERVING_RENEW_FRACTION, now);
  if (life.unusable) return life;
  const missing = hosts.filter((h) => (isIP(h) ? !cert.checkIP(h) : !cert.checkHost(h)));
  if (missing.length) return { unusable: `does not cover ${missing.join(', ')}` };
  if (!isSignedBy(pair!.cert, caPem)) return { renew: 'signed by a previous CA' };
  return life;
}

export function expiryOf(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

/** Why a key pair cannot be served at all (unparseable, mismatched, expired), or undefined. */
export function pairProblem(pair: KeyPair | undefined, now = new Date()): string | undefined {
  const parsed = parsePair(pair);
  if ('problem' in parsed) return parsed.problem;
  return lifeVerdict(parsed.cert, SERVING_RENEW_FRACTION, now).unusable;
}

export function isSignedBy(certPem: string, caPem: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(caPem);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}
