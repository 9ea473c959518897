import { describe, expect, it } from '@jest/globals';
import { EventRecorder, type KubeClient } from '../../src/kube/index.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** An apiserver that takes `delayMs` per Event write and counts how many it serves at once. */
function fakeApi(delayMs = 5) {
  const api = { writes: 0, inFlight: 0, most: 0 };
  const kube = {
    request: async () => {
      api.inFlight++;
      api.most = Math.max(api.most, api.inFlight);
      await tick(delayMs);
      api.inFlight--;
      api.writes++;
      return {};
    },
  } as unknown as KubeClient;
  return { api, kube };
}

const object = (i: number) => ({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name: `app-${i}`, namespace: 'argocd', uid: `uid-${i}` });

describe('Events (best effort, bounded)', () => {
  it('a burst of Events on many objects is written a few at a time, so that it never crowds out the reverts it reports', async () => {
    const { api, kube } = fakeApi();
    const events = new EventRecorder(kube, 'test', () => undefined, 0);
    for (let i = 0; i < 200; i++) events.record(object(i), 'Warning', 'SpecDriftReverted', 'Reverted');
    for (let i = 0; i < 200 && api.writes < 200; i++) await tick(10);
    expect(api.writes).toBe(200);
    expect(api.most).toBeLessThanOrEqual(4);
  });

  it('remembers a bounded number of series, forgetting the least recently recorded', async () => {
    const { api, kube } = fakeApi(0);
    const events = new EventRecorder(kube, 'test', () => undefined, 0);
    for (let i = 0; i < 10_050; i++) events.record(object(i), 'Warning', 'SpecDriftReverted', 'Reverted');
    for (let i = 0; i < 2000 && api.writes < 10_050; i++) await tick(20);
    expect(api.writes).toBe(10_050);
    events.record(object(-1), 'Warning', 'SpecDriftReverted', 'Reverted');
    expect(events.size).toBeLessThanOrEqual(10_000);
  }, 60_000);
});
