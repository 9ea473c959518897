import { describe, expect, it } from '@jest/globals';
import jsonpatch from 'fast-json-patch';
import { entryValues, type Layers } from '../../src/guard/index.js';
import { KubeError, type KubeClient, type KubeObject } from '../../src/kube/index.js';
import type { WatcherDeps } from '../../src/sync/watcher.js';
import { context, keyOf, review, setTargetRevision, stamp } from '../helpers/admission.js';
import { leadingWatcher } from '../helpers/watcher.js';
import { createLogger } from '../../src/log/index.js';

const COLLECTION = '/apis/argoproj.io/v1alpha1/applications';
const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

/**
 * One Application as the apiserver serves it to the watcher: a list at the current revision,
 * a watch from a revision (410 Gone once the history is compacted), JSON patches applied with
 * their resourceVersion test (each a new version the watch shows), Events accepted.
 */
class FakeApiserver {
  revision = 0;
  object!: KubeObject;
  readonly patches: unknown[][] = [];
  readonly events: Array<{ reason: string; message: string }> = [];
  private compactedAt = 0;
  private watchers: Array<(event: unknown) => void> = [];
  private ends: Array<(err: Error) => void> = [];

  /** A write at revision `at`: the watch shows it (or, `unseen`, it is compacted away before any watch could). */
  write(object: KubeObject, at: number, unseen = false): void {
    this.revision = at;
    this.object = structuredClone(object);
    this.object.metadata!.resourceVersion = String(at);
    if (unseen) {
      this.compactedAt = ++this.revision;
      for (const end of this.ends.splice(0)) end(new KubeError(410, 'Expired', 'too old resource version'));
      this.watchers = [];
    } else {
      for (const send of this.watchers) send({ type: 'MODIFIED', object: structuredClone(this.object) });
    }
  }

  asKube(): KubeClient {
    return {
      request: async (method: string, path: string, options: { body?: unknown } = {}) => {
        if (method === 'GET' && path === COLLECTION) return { metadata: { resourceVersion: String(this.revision) }, items: [structuredClone(this.object)] };
        if (method === 'PATCH') {
          const ops = options.body as jsonpatch.Operation[];
          this.patches.push(ops);
          this.write(jsonpatch.applyPatch(structuredClone(this.object), ops, true).newDocument, this.revision + 1);
          return undefined;
        }
        if (method === 'POST' && path.endsWith('/events')) {
          this.events.push(options.body as { reason: string; message: string });
          return undefined;
        }
        throw new Error(`unexpected ${method} ${path}`);
      },
      stream: (_path: string, query: Record<string, string | undefined>, onLine: (event: unknown) => void, signal: AbortSignal) =>
        new Promise<void>((_resolve, reject) => {
          if (Number(query.resourceVersion) < this.compactedAt) return reject(new KubeError(410, 'Expired', 'too old resource version'));
          this.watchers.push(onLine);
          this.ends.push(reject);
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
      keepConnectionsOpen: () => () => undefined,
    } as unknown as KubeClient;
  }
}

/**
 * The Application stamped by a trusted write at 100 and listed at 105, known canonical there.
 * A guard period began at 110 (a blind window before it); no list has shown the object since.
 */
async function watching(deps: Partial<WatcherDeps> = {}) {
  const t = context();
  const { request } = review('alice-update-spec');
  const object = request.oldObject!;
  stamp(t, request, object);
  const api = new FakeApiserver();
  api.write(object, 100);
  api.revision = 105;
  const kube = api.asKube();
  const guardPeriodFrom110: Layers = { guard: { intact: true, since: '110', sinceTime: 0 }, stamp: { intact: false }, tombstone: { intact: false } };
  const watcher = leadingWatcher(t, kube, { verifyLayers: async () => guardPeriodFrom110, ...deps });
  await watcher.start();
  const key = keyOf(request);
  expect(t.cache.get(key)).toMatchObject({ resourceVersion: '100', knownAt: '105' });
  // The agent's write at 120, within the period, admitted unstamped (its stamp review timed out: the stamp webhook fails open for it).
  const written = structuredClone(api.object);
  setTargetRevision(written, 'v2-from-the-agent');
  return { t, api, key, watcher, written };
}

const revisionOf = (t: ReturnType<typeof context>, key: string) => (entryValues(t.cache.get(key)!)['/spec'] as { source: { targetRevision: string } }).source.targetRevision;

describe('the watcher vouches from the version its watch showed before (no gap)', () => {
  it('a trusted write made within a guard period, right after the canonical version, is learned and stamped, not reverted as unattributed', async () => {
    const { t, api, key, watcher, written } = await watching();
    api.write(written, 120);
    for (let i = 0; i < 200 && revisionOf(t, key) !== 'v2-from-the-agent'; i++) await tick();
    await watcher.stop();
    expect(revisionOf(t, key)).toBe('v2-from-the-agent');
    expect(api.patches).toHaveLength(1);
    expect(JSON.stringify(api.patches[0])).not.toContain('targetRevision');
    expect(api.object.spec).toMatchObject({ source: { targetRevision: 'v2-from-the-agent' } });
  });

  it('the same write seen only by a list after a gap in the watch (410 Gone) follows nothing known: not attributable, reverted', async () => {
    const { t, api, key, watcher, written } = await watching();
    api.write(written, 120, true);
    for (let i = 0; i < 200 && api.patches.length === 0; i++) await tick();
    for (let i = 0; i < 200 && api.object.metadata!.resourceVersion !== t.cache.get(key)?.resourceVersion; i++) await tick();
    await watcher.stop();
    expect(api.patches[0]).toContainEqual(expect.objectContaining({ op: 'replace', path: '/spec/source/targetRevision' }));
    expect(api.object.spec).toMatchObject({ source: { targetRevision: revisionOf(t, key) } });
    expect(revisionOf(t, key)).not.toBe('v2-from-the-agent');
  });
});

describe('the watcher with the guard layer known out of force', () => {
  it('plans a drift behind admission in one pass with the layers last seen broken: no fresh verification, the version observed once, reverted', async () => {
    const broken: Layers = { guard: { intact: false }, stamp: { intact: true, since: '95', sinceTime: 0 }, tombstone: { intact: false } };
    let verifications = 0;
    const { t, api, key, watcher, written } = await watching({ verifyLayers: async () => (verifications++, broken), layersIfGuardBroken: () => broken });
    // Each time the drift's view is worked out before the revert is sent (a second observe used to follow the first).
    const rule = t.policy.rules[0]!;
    const of = rule.view.of.bind(rule.view);
    let viewsBeforeRevert = 0;
    rule.view.of = (object) => {
      if (api.patches.length === 0) viewsBeforeRevert++;
      return of(object);
    };
    api.write(written, 120);
    for (let i = 0; i < 200 && api.patches.length === 0; i++) await tick();
    await watcher.stop();
    expect(api.patches[0]).toContainEqual(expect.objectContaining({ op: 'replace', path: '/spec/source/targetRevision' }));
    expect(revisionOf(t, key)).not.toBe('v2-from-the-agent');
    expect(verifications).toBe(0);
    expect(viewsBeforeRevert).toBe(1);
  });
});

describe('a drift reverted in a blind window', () => {
  it('is reported once: one UnattributedChange Event that says it was reverted, one "drift reverted" warning (not a second Event and line saying the same)', async () => {
    const blind: Layers = { guard: { intact: false }, stamp: { intact: false }, tombstone: { intact: false } };
    const lines: Array<{ level: string; msg: string; key?: string }> = [];
    const logger = createLogger('info', (line) => void lines.push(JSON.parse(line)));
    const { api, key, watcher, written } = await watching({ verifyLayers: async () => blind, layersIfGuardBroken: () => blind, logger });
    api.write(written, 120);
    for (let i = 0; i < 200 && (api.patches.length === 0 || api.events.length === 0); i++) await tick();
    await tick(50);
    await watcher.stop();
    expect(api.patches).toHaveLength(1);
    expect(api.events.map((e) => e.reason)).toEqual(['UnattributedChange']);
    expect(api.events[0]!.message).toContain('/spec/source/targetRevision');
    expect(api.events[0]!.message).toContain('reverted (blindWindow.changes: revert)');
    const about = lines.filter((l) => l.key === key);
    expect(about.map((l) => [l.level, l.msg])).toEqual([['warn', 'drift reverted']]);
    expect(about[0]).toMatchObject({ attribution: 'unattributed' });
  });
});
