import { randomBytes } from 'node:crypto';
import { expect } from '@jest/globals';
import { PackedValues, valuesText, type CanonicalEntry } from '../../src/guard/index.js';

/** A small entry whose value is named by `hash`. */
export const smallEntry = (hash: string): CanonicalEntry => ({
  viewHash: hash,
  valuesJson: '{"/spec":{"a":1}}',
  stamp: `v1.${hash}.x`,
  resourceVersion: '7',
  uid: 'u',
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
});

/** An entry of ~5 KB that compresses as real ones do (mostly structure, some unique values). */
export const bulkyEntry = (i: number): CanonicalEntry => ({
  viewHash: randomBytes(32).toString('hex'),
  valuesJson: JSON.stringify({ '/spec': { source: { repoURL: 'https://github.com/org/repo.git', helm: { parameters: Array.from({ length: 60 }, (_, p) => ({ name: `c${p}.replicas`, value: `${i}-${p}-${randomBytes(6).toString('hex')}` })) } } } }),
  stamp: `v2.${randomBytes(32).toString('hex')}.1.${randomBytes(32).toString('hex')}`,
  resourceVersion: String(i),
  uid: randomBytes(16).toString('hex'),
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
});

/**
 * In this test file's comparisons a packed value equals its JSON text: the stores pack the
 * values they load (packEntry), tests write them as text.
 */
export function packedEqualsItsText(): void {
  const text = (v: unknown) => (typeof v === 'string' || v instanceof PackedValues ? valuesText(v) : undefined);
  expect.addEqualityTesters([(a, b) => (a instanceof PackedValues || b instanceof PackedValues) && text(a) !== undefined && text(b) !== undefined ? text(a) === text(b) : undefined]);
}
