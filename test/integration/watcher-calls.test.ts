import { describe, expect, it } from '@jest/globals';
import jsonpatch from 'fast-json-patch';
import { CALLS_IN_FLIGHT, type KubeClient, type KubeObject } from '../../src/kube/index.js';
import { context, keyOf, review, setTargetRevision, stamp } from '../helpers/admission.js';
import { leadingWatcher } from '../helpers/watcher.js';

const COLLECTION = '/apis/argoproj.io/v1alpha1/applications';
const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));
const OBJECTS = CALLS_IN_FLIGHT.repairs + 36;

/**
 * Many Applications as the apiserver serves them: listed, watched, and PATCHed; each PATCH
 * is answered only when the test lets it (a busy apiserver), so the calls in flight pile up.
 */
class SlowApiserver {
  revision = 100;
  readonly objects = new Map<string, KubeObject>();
  inFlight = 0;
  mostInFlight = 0;
  /** PATCHes answered. */
  patched = 0;
  private readonly held: Array<() => void> = [];
  private watchers: Array<(event: unknown) => void> = [];

  write(object: KubeObject): void {
    const stored = structuredClone(object);
    stored.metadata!.resourceVersion = String(++this.revision);
    this.objects.set(stored.metadata!.name!, stored);
    for (const send of this.watchers) send({ type: 'MODIFIED', object: structuredClone(stored) });
  }

  /** Answers every PATCH held so far. */
  answer(): void {
    for (const release of this.held.splice(0)) release();
  }

  asKube(): KubeClient {
    return {
      request: async (method: string, path: string, options: { body?: unknown } = {}) => {
        if (method === 'GET' && path === COLLECTION) return { metadata: { resourceVersion: String(this.revision) }, items: [...this.objects.values()].map((o) => structuredClone(o)) };
        if (method === 'PATCH') {
          this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
          await new Promise<void>((release) => this.held.push(release));
          this.inFlight--;
          this.patched++;
          const name = path.slice(path.lastIndexOf('/') + 1);
          this.write(jsonpatch.applyPatch(structuredClone(this.objects.get(name)!), options.body as jsonpatch.Operation[], true).newDocument);
          return undefined;
        }
        if (method === 'POST' && path.endsWith('/events')) return undefined;
        throw new Error(`unexpected ${method} ${path}`);
      },
      stream: (_path: string, _query: unknown, onLine: (event: unknown) => void, signal: AbortSignal) =>
        new Promise<void>((_resolve, reject) => {
          this.watchers.push(onLine);
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
      keepConnectionsOpen: () => () => undefined,
    } as unknown as KubeClient;
  }
}

/**
 * OBJECTS Applications known canonical to a leading watcher, all but the last drifted behind
 * admission (the guard layer out of force: each drift is reverted at once), the apiserver
 * holding every revert's PATCH until the test answers: the repairs' share of calls all in flight.
 */
async function burstHeldAtTheApiserver() {
  const t = context();
  const { request } = review('alice-update-spec');
  const api = new SlowApiserver();
  for (let i = 0; i < OBJECTS; i++) {
    const object = structuredClone(request.oldObject!);
    object.metadata!.name = `app-${i}`;
    stamp(t, { ...request, name: object.metadata!.name }, object);
    api.write(object);
  }
  const watcher = leadingWatcher(t, api.asKube(), { layersIfGuardBroken: () => ({ guard: { intact: false }, stamp: { intact: false }, tombstone: { intact: false } }) });
  await watcher.start();
  for (let i = 0; i < OBJECTS - 1; i++) {
    const drifted = structuredClone(api.objects.get(`app-${i}`)!);
    setTargetRevision(drifted, `drift-${i}`);
    api.write(drifted);
  }
  for (let i = 0; i < 1000 && api.inFlight < CALLS_IN_FLIGHT.repairs; i++) await tick();
  expect(api.inFlight).toBe(CALLS_IN_FLIGHT.repairs);
  const drifted = () => [...api.objects.values()].filter((o) => JSON.stringify(o.spec).includes('"drift-'));
  /** Answers PATCHes as they come until no drift is left or `tries` ticks passed. */
  const answerAll = async (tries = 400) => {
    for (let i = 0; i < tries && drifted().length; i++) {
      api.answer();
      await tick();
    }
  };
  return { t, api, watcher, drifted, answerAll, keyOfName: (name: string) => keyOf({ ...request, name }) };
}

describe('the watcher’s calls to the apiserver in a burst of drifts', () => {
  it('sends at most its share of calls at once, reverts every drift, and handles a version in sync while every call waits', async () => {
    const { t, api, watcher, drifted, answerAll, keyOfName } = await burstHeldAtTheApiserver();
    const last = `app-${OBJECTS - 1}`;
    try {
      // A version of the last object in sync (its status changed): known at its new revision
      // while every call is held, not queued behind the reverts.
      const statusOnly = structuredClone(api.objects.get(last)!);
      statusOnly.status = { sync: { status: 'Synced' } };
      api.write(statusOnly);
      for (let i = 0; i < 400 && t.cache.get(keyOfName(last))?.resourceVersion !== String(api.revision); i++) await tick();
      expect(t.cache.get(keyOfName(last))?.resourceVersion).toBe(String(api.revision));
      // The apiserver answers: every drift is reverted, never more calls at once than the share.
      await answerAll();
      expect(drifted()).toEqual([]);
      expect(api.mostInFlight).toBe(CALLS_IN_FLIGHT.repairs);
      expect(api.patched).toBe(OBJECTS - 1);
    } finally {
      api.answer();
      await watcher.stop();
    }
  }, 20_000);

  it('a replica that lost the lease while reverts waited for a slot sends none of them', async () => {
    const { api, watcher, drifted, answerAll } = await burstHeldAtTheApiserver();
    try {
      watcher.onLeadershipChange(false);
      await answerAll(100);
      // The calls in flight when the lease was lost land; the plans still waiting are dropped
      // (the new leader relists and decides them).
      expect(api.patched).toBe(CALLS_IN_FLIGHT.repairs);
      expect(drifted()).toHaveLength(OBJECTS - 1 - CALLS_IN_FLIGHT.repairs);
    } finally {
      api.answer();
      await watcher.stop();
    }
  }, 20_000);
});
