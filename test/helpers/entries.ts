import { expect } from '@jest/globals';
import { PackedValues, valuesText, type CanonicalEntry } from '../../src/guard/index.js';

export { bulkyEntry } from './bulky-entry.js';

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


/**
 * In this test file's comparisons a packed value equals its JSON text: the stores pack the
 * values they load (packEntry), tests write them as text.
 */
export function packedEqualsItsText(): void {
  const text = (v: unknown) => (typeof v === 'string' || v instanceof PackedValues ? valuesText(v) : undefined);
  expect.addEqualityTesters([(a, b) => (a instanceof PackedValues || b instanceof PackedValues) && text(a) !== undefined && text(b) !== undefined ? text(a) === text(b) : undefined]);
}
