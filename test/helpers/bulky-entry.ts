import { randomBytes } from 'node:crypto';
import type { CanonicalEntry } from '../../src/guard/index.js';

// Without jest: bench/store-write uses it too.
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
