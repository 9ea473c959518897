import { describe, expect, it } from '@jest/globals';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import {
  bundleCarries,
  caVerdict,
  createCA,
  createServingCert,
  isSignedBy,
  joinPem,
  pairProblem,
  servingVerdict,
  splitPem,
  trustedBundle,
} from '../../src/certs/index.js';

const DAY = 24 * 60 * 60 * 1000;
const hosts = ['spec-guard', 'spec-guard.spec-guard', 'spec-guard.spec-guard.svc', 'spec-guard.spec-guard.svc.cluster.local', '127.0.0.1'];
const ca = createCA();
const serving = createServingCert(ca, hosts);
const days = (cert: X509Certificate) => Math.round((Date.parse(cert.validTo) - Date.now()) / DAY);

describe('generated certificates', () => {
  it('the CA: a real subject, a random serial, a CA for 10 years that signs itself', () => {
    const cert = new X509Certificate(ca.cert);
    expect(cert.subject).toContain('CN=spec-guard-ca');
    expect(cert.subject).toContain('O=spec-guard');
    expect(cert.ca).toBe(true);
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(days(cert)).toBe(3650);
    expect(cert.serialNumber).not.toBe(new X509Certificate(createCA().cert).serialNumber);
    // Node's X509Certificate shows extended key usage only; the key usage bits come from forge.
    const usage = forge.pki.certificateFromPem(ca.cert).getExtension('keyUsage') as { keyCertSign?: boolean; critical?: boolean };
    expect(usage).toMatchObject({ keyCertSign: true, critical: true });
    expect(cert.checkPrivateKey(createPrivateKey(ca.key))).toBe(true);
  });

  it('the serving certificate: SANs for the Service names and IPs, server auth, 1 year, chained to the CA', () => {
    const cert = new X509Certificate(serving.cert);
    expect(cert.ca).toBe(false);
    expect(cert.subjectAltName?.split(', ')).toEqual([
      'DNS:spec-guard',
      'DNS:spec-guard.spec-guard',
      'DNS:spec-guard.spec-guard.svc',
      'DNS:spec-guard.spec-guard.svc.cluster.local',
      'IP Address:127.0.0.1',
    ]);
    for (const h of hosts.slice(0, 4)) expect(cert.checkHost(h)).toBe(h);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('evil.example')).toBeUndefined();
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // extKeyUsage serverAuth
    const usage = forge.pki.certificateFromPem(serving.cert).getExtension('keyUsage') as { digitalSignature?: boolean; keyCertSign?: boolean };
    expect(usage).toMatchObject({ digitalSignature: true, keyCertSign: false });
    expect(days(cert)).toBe(365);
    expect(cert.issuer).toBe(new X509Certificate(ca.cert).subject);
    expect(cert.checkIssued(new X509Certificate(ca.cert))).toBe(true);
    expect(cert.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(cert.verify(new X509Certificate(createCA().cert).publicKey)).toBe(false);
    expect(cert.checkPrivateKey(createPrivateKey(serving.key))).toBe(true);
  });
});

describe('verdicts', () => {
  const now = Date.now();

  it('a fresh CA is fine; with a fifth of its life left it is due; expired or broken it is unusable', () => {
    expect(caVerdict(ca)).toEqual({});
    expect(caVerdict(ca, new Date(now + 3650 * DAY * 0.81)).renew).toMatch(/last fifth/);
    expect(caVerdict(ca, new Date(now + 3650 * DAY * 0.79))).toEqual({});
    expect(caVerdict(ca, new Date(now + 3651 * DAY)).unusable).toMatch(/expired/);
    expect(caVerdict(undefined).unusable).toBe('missing');
    expect(caVerdict({ cert: 'garbage', key: ca.key }).unusable).toMatch(/unparseable certificate/);
    expect(caVerdict({ cert: ca.cert, key: serving.key }).unusable).toMatch(/does not match/);
    expect(caVerdict(serving).unusable).toBe('not a CA certificate');
  });

  it('a serving certificate is renewed with a third of its life left, or when a newer CA took over', () => {
    const bundle = [ca.cert];
    expect(servingVerdict(serving, bundle, ca.cert, hosts)).toEqual({});
    expect(servingVerdict(serving, bundle, ca.cert, hosts, new Date(now + 365 * DAY * 0.68)).renew).toMatch(/last third/);
    expect(servingVerdict(serving, bundle, ca.cert, hosts, new Date(now + 365 * DAY * 0.66))).toEqual({});
    const next = createCA();
    expect(servingVerdict(serving, [next.cert, ca.cert], next.cert, hosts)).toEqual({ renew: 'signed by a previous CA' });
  });

  it('a serving certificate is unusable when expired, for other hosts, signed by an untrusted CA or mismatched', () => {
    const old = createServingCert(ca, hosts, 1, new Date(now - 2 * DAY));
    expect(servingVerdict(old, [ca.cert], ca.cert, hosts).unusable).toMatch(/expired/);
    expect(pairProblem(old)).toMatch(/expired/);
    expect(servingVerdict(serving, [ca.cert], ca.cert, [...hosts, 'other.example']).unusable).toBe('does not cover other.example');
    const stranger = createCA();
    expect(servingVerdict(serving, [stranger.cert], stranger.cert, hosts).unusable).toBe('not signed by a trusted CA');
    expect(servingVerdict({ cert: serving.cert, key: ca.key }, [ca.cert], ca.cert, hosts).unusable).toMatch(/does not match/);
    expect(servingVerdict({ cert: serving.cert, key: 'not a key' }, [ca.cert], ca.cert, hosts).unusable).toMatch(/unparseable private key/);
    expect(pairProblem(serving)).toBeUndefined();
  });

  it('isSignedBy follows the chain, not the names', () => {
    expect(isSignedBy(serving.cert, ca.cert)).toBe(true);
    expect(isSignedBy(serving.cert, createCA().cert)).toBe(false); // same subject, other key
    expect(isSignedBy('garbage', ca.cert)).toBe(false);
  });
});

describe('CA bundles', () => {
  it('keeps CAs until they expire, drops duplicates, non-CAs and garbage, in order', () => {
    const next = createCA();
    const expired = createCA('old', 1, new Date(Date.now() - 2 * DAY));
    const text = joinPem([next.cert, ca.cert, next.cert, serving.cert, expired.cert]) + '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    const pems = splitPem(text);
    expect(pems).toHaveLength(6);
    expect(trustedBundle(pems)).toEqual([...splitPem(next.cert), ...splitPem(ca.cert)]);
    expect(bundleCarries(joinPem([next.cert, ca.cert]), ca.cert)).toBe(true);
    expect(bundleCarries(joinPem([next.cert]), ca.cert)).toBe(false);
    expect(bundleCarries('', ca.cert)).toBe(false);
  });
});
