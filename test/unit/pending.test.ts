import { describe, expect, it } from '@jest/globals';
import { WorkQueue } from '../../src/kube/index.js';
import { READ_AGAIN, releaseVersion, type Pending } from '../../src/sync/pending.js';
import type { Target } from '../../src/sync/repairer.js';

const drifted = (): Pending => ({
  target: { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications', key: 'argoproj.io/applications/argocd/guestbook' } as Target,
  type: 'MODIFIED',
  object: {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'guestbook', namespace: 'argocd', uid: 'u-1', resourceVersion: '42', managedFields: [{ manager: 'kubectl-edit' }], annotations: { a: 'b' } },
    spec: { source: { targetRevision: 'evil' } },
    status: { resources: new Array(100).fill({ kind: 'Deployment' }) },
  },
  seenAt: 1,
  attempt: 0,
  listedAt: '40',
  storeListed: true,
});

describe('a planned revert lets go of the version it was planned on', () => {
  it('keeps only what names the version: the PATCH test and the Event need nothing else', () => {
    const work = drifted();
    releaseVersion(work);
    expect(work.object).toEqual({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'guestbook', namespace: 'argocd', uid: 'u-1', resourceVersion: '42' } });
    expect(work).toMatchObject({ stale: true, listedAt: undefined, storeListed: false, seenAt: 1, attempt: 0 });
  });

  it('a failed revert is retried on a fresh read, never decided on the released version', async () => {
    const runs: Pending[] = [];
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    // As the watcher's queue: a failed item is retried as it is now, one attempt more.
    const queue = new WorkQueue<Pending>(
      async (_key, work) => {
        runs.push({ ...work, object: structuredClone(work.object) });
        if (runs.length === 1) {
          releaseVersion(work); // planned as a revert; then the PATCH fails
          throw new Error('revert failed: 500');
        }
        done();
      },
      { retryWith: (work) => ({ ...work, attempt: work.attempt + 1 }) },
    );
    queue.add('k', drifted());
    await finished;
    await queue.stop();
    expect(runs[0]!.object.spec).toEqual({ source: { targetRevision: 'evil' } });
    expect(runs[1]).toMatchObject({ stale: true, attempt: 1 });
    expect(runs[1]!.object.spec).toBeUndefined();
  });
});

describe('what a work item knows of the version before it', () => {
  it('is forgotten when the object is read again: a read may return a version several writes on', () => {
    const work = { ...drifted(), follows: '41' };
    releaseVersion(work);
    expect(work.follows).toBeUndefined();
    expect({ ...drifted(), follows: '41', ...READ_AGAIN }.follows).toBeUndefined();
  });
});
