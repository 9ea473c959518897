import { describe, expect, it } from '@jest/globals';
import { decide, entryValues, observe, resolve, STAMP_ANNOTATION, UNKNOWN_LAYERS } from '../../src/guard/index.js';
import type { AdmissionRequest, KubeObject } from '../../src/kube/index.js';
import { context, keyOf, review, stamp } from '../helpers/admission.js';

// The side doors of an Argo CD Application (issue: nothing but the source of truth decides
// what an agent cluster deploys). Each write is the captured UPDATE of a real apiserver with one
// door changed; the Argo CD profile (normalizer: argocd-application) guards them all by default.

const CONTROLLER = 'system:serviceaccount:argocd:argocd-application-controller';
const MANIFEST = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hers', namespace: 'default' }, data: { owned: 'mallory' } });

type Door = { door: string; write: (o: KubeObject) => void };

/** The table of the issue: each write by an untrusted user and the door it goes through. */
const doors: Door[] = [
  { door: '/operation', write: (o) => void (o.operation = { sync: { manifests: [MANIFEST] } }) },
  { door: '/operation', write: (o) => void (o.operation = { sync: { source: { repoURL: 'https://evil.example/r.git', path: '.', targetRevision: 'HEAD' } } }) },
  { door: '/operation', write: (o) => void (o.operation = { sync: { revision: 'evil', prune: true, syncOptions: ['Replace=true'] } }) },
  { door: '/operation', write: (o) => void (o.operation = { sync: {} }) },
  { door: '/status', write: (o) => void ((o.status as Record<string, unknown>).operationState = { phase: 'Running', operation: { sync: { manifests: [MANIFEST] } }, startedAt: '2026-12-04T10:00:00Z' }) },
  { door: '/metadata/annotations/argocd.argoproj.io~1skip-reconcile', write: (o) => void (o.metadata!.annotations!['argocd.argoproj.io/skip-reconcile'] = 'true') },
  { door: '/metadata/finalizers', write: (o) => void (o.metadata!.finalizers = []) },
];

/** The captured controller status UPDATE, made `user`'s, with the old object stamped and carrying the resources finalizer. */
function update(user: string): { t: ReturnType<typeof context>; request: AdmissionRequest } {
  const t = context();
  const { request } = review('controller-update-status');
  request.userInfo = { username: user, groups: ['system:authenticated'] };
  request.oldObject!.metadata!.finalizers = ['resources-finalizer.argocd.argoproj.io'];
  request.oldObject!.status = { sync: { status: 'Synced' }, ...(request.oldObject!.status as object) };
  stamp(t, request, request.oldObject!);
  request.object = structuredClone(request.oldObject!);
  request.object.status = { ...(request.object.status as object), reconciledAt: '2026-12-04T11:00:00Z' };
  return { t, request };
}

describe('the side doors at admission', () => {
  it.each(doors.map((d, i) => [i, d.door, d] as const))('write %i: alice through %s is refused, naming the door', (_i, door, d) => {
    const { t, request } = update('alice');
    d.write(request.object!);
    for (const webhook of ['mutate', 'validate'] as const) {
      const decision = decide(request, webhook, t.ctx);
      expect(decision.kind).toBe('deny');
      if (decision.kind === 'deny') {
        expect(decision.message).toContain(`${door} of Application argocd/guestbook`);
        expect(decision.changed.some((p) => p === door || p.startsWith(`${door}/`))).toBe(true);
      }
    }
  });

  it('the controller consumes the operation, sets one for auto-sync, writes status and removes finalizers: no denial', () => {
    const writes: Array<(o: KubeObject) => void> = [
      (o) => void (o.operation = { initiatedBy: { automated: true }, sync: { revision: 'abc123' } }),
      (o) => void ((o.status as Record<string, unknown>).operationState = { phase: 'Succeeded', operation: { sync: {} } }),
      (o) => void (o.metadata!.finalizers = []),
    ];
    for (const write of writes) {
      const { t, request } = update(CONTROLLER);
      write(request.object!);
      expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
    }
    // The operation the agent gave it, cleared once run.
    const { t, request } = update(CONTROLLER);
    request.oldObject!.operation = { sync: { revision: 'v2' } };
    stamp(t, request, request.oldObject!);
    request.object = structuredClone(request.oldObject!);
    delete request.object.operation;
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  it("the garbage collector's own finalizers are its to remove, whoever guards the rest", () => {
    const { t, request } = update('system:serviceaccount:kube-system:generic-garbage-collector');
    request.oldObject!.metadata!.finalizers = ['foregroundDeletion', 'resources-finalizer.argocd.argoproj.io'];
    request.oldObject!.metadata!.deletionTimestamp = '2026-12-04T11:00:00Z';
    request.object = structuredClone(request.oldObject!);
    request.object.metadata!.finalizers = ['resources-finalizer.argocd.argoproj.io'];
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
    request.object.metadata!.finalizers = [];
    expect(decide(request, 'validate', t.ctx)).toMatchObject({ kind: 'deny', changed: ['/metadata/finalizers'] });
  });

  it("the controller may not open the source of truth's doors: skip-reconcile and a changed spec are refused", () => {
    const { t, request } = update(CONTROLLER);
    request.object!.metadata!.annotations!['argocd.argoproj.io/skip-reconcile'] = 'true';
    const decision = decide(request, 'validate', t.ctx);
    expect(decision).toMatchObject({ kind: 'deny', changed: ['/metadata/annotations/argocd.argoproj.io~1skip-reconcile'] });
  });

  it('rewrite mode puts every door back, the consumer-only ones from the old object', () => {
    const t = context('mode: rewrite\nnormalizer: argocd-application');
    const { request } = update('alice');
    stamp(t, request, request.oldObject!);
    request.object = structuredClone(request.oldObject!);
    request.object.operation = { sync: { manifests: [MANIFEST] } };
    (request.object.status as Record<string, unknown>).operationState = { phase: 'Running' };
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'rewritten' });
    const patch = decision.kind === 'allow' ? decision.patch ?? [] : [];
    expect(patch).toContainEqual({ op: 'remove', path: '/operation' });
    expect(patch).toContainEqual({ op: 'add', path: '/status', value: request.oldObject!.status });
  });
});

/** alice's captured update, its old object (with the agent's operation) stamped and learned by the watcher. */
function learnedWithOperation() {
  const t = context();
  const { request } = update('alice');
  request.oldObject!.operation = { sync: { revision: 'v2' } };
  stamp(t, request, request.oldObject!);
  const key = keyOf(request);
  const rule = t.policy.rules[0]!;
  const learned = observe(request.oldObject!, rule, key, undefined, undefined, t.stamper);
  if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
  return { t, request, key, rule, learned };
}

describe('the side doors behind admission', () => {
  /** The stamped object the watcher knows, and the same object after `write`. */
  function observed(write: (o: KubeObject) => void) {
    const { t, request, key, rule, learned } = learnedWithOperation();
    const object = structuredClone(request.oldObject!);
    object.metadata!.resourceVersion = '999';
    write(object);
    const obs = observe(object, rule, key, learned.entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error(`expected changed, got ${obs.kind}`);
    return resolve(obs, object, rule, key, UNKNOWN_LAYERS, t.stamper, Date.now());
  }

  it('in a blind window, a removed operation (the controller ran it) is accepted, never put back to run again', () => {
    const plan = observed((o) => void delete o.operation);
    expect(plan).toMatchObject({ action: 'learn', consumed: true, attribution: 'unattributed' });
  });

  it('in a blind window, a changed operation, a removed finalizer and skip-reconcile are reverted to the canonical copy', () => {
    for (const write of [
      (o: KubeObject) => void (o.operation = { sync: { manifests: [MANIFEST] } }),
      (o: KubeObject) => void (o.metadata!.finalizers = []),
      (o: KubeObject) => void (o.metadata!.annotations!['argocd.argoproj.io/skip-reconcile'] = 'true'),
      // Removing the operation and opening another door at once is no consumption.
      (o: KubeObject) => {
        delete o.operation;
        o.metadata!.finalizers = [];
      },
    ]) {
      expect(observed(write)).toMatchObject({ action: 'revert', attribution: 'unattributed' });
    }
  });

  it('the stamp covers every guarded door: the agent stamps the operation and finalizers it writes', () => {
    const t = context();
    const { request } = review('agent-create');
    request.object!.operation = { sync: { revision: 'v2' } };
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'trusted' });
    const stampPatch = decision.kind === 'allow' ? decision.patch?.find((p) => p.path.includes('annotations')) : undefined;
    const value = stampPatch && 'value' in stampPatch ? stampPatch.value : undefined;
    const stampValue = typeof value === 'string' ? value : (value as Record<string, string>)[STAMP_ANNOTATION]!;
    const withOperation = t.policy.rules[0]!.view.of(request.object).hash;
    delete request.object!.operation;
    expect(t.stamper.verify(stampValue, keyOf(request))).toBe(withOperation);
    expect(t.policy.rules[0]!.view.of(request.object).hash).not.toBe(withOperation);
  });
});

describe('upgrading from a spec-guard that guarded /spec alone', () => {
  it('an entry learned before the doors were named adopts them from the object: nothing is stripped; a real spec drift is still found', () => {
    const { t, request, key, rule, learned } = learnedWithOperation();
    // What the previous release stored: /spec only, no view id.
    const { view: _view, ...legacy } = { ...learned.entry, valuesJson: JSON.stringify({ '/spec': request.oldObject!.spec }), viewHash: 'legacy' };
    const object = structuredClone(request.oldObject!);
    delete object.metadata!.annotations![STAMP_ANNOTATION];
    const adopted = observe(object, rule, key, legacy, undefined, t.stamper);
    expect(adopted.kind).toBe('learn');
    if (adopted.kind === 'learn') {
      expect(adopted.entry.view).toBe(rule.view.id);
      expect(entryValues(adopted.entry)).toMatchObject({ '/operation': { sync: { revision: 'v2' } }, '/metadata/finalizers': ['resources-finalizer.argocd.argoproj.io'] });
      expect(t.stamper.verify(adopted.entry.stamp, key)).toBe(adopted.entry.viewHash);
    }
    (object.spec as Record<string, any>).source.targetRevision = 'evil';
    const drifted = observe(object, rule, key, legacy, undefined, t.stamper);
    expect(drifted).toMatchObject({ kind: 'changed', changed: ['/spec/source/targetRevision'] });
  });
});

describe('a number rewritten as an equal double (the policy’s CEL compares int and double by value)', () => {
  it('is not vouched for by the guard layer’s continuity: reverted to the exact value, not learned', async () => {
    const { parseJson } = await import('../../src/kube/json.js');
    const t = context();
    const { request } = update('alice');
    const old = parseJson(JSON.stringify(request.oldObject).replace('"project":"default"', '"project":"default","__big":1')) as KubeObject;
    (old.spec as Record<string, unknown>).source = parseJson('{"repoURL":"https://example.com/r.git","path":"p","helm":{"valuesObject":{"n":1234567890123456789}}}');
    stamp(t, request, old);
    const key = keyOf(request);
    const rule = t.policy.rules[0]!;
    const learned = observe(old, rule, key, undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
    // What the apiserver stores after a PUT of 1234567890123456789.0: the float64, written back as an integer.
    const rounded = parseJson(JSON.stringify(old).replace('1234567890123456789', '1234567890123456800')) as KubeObject;
    rounded.metadata!.resourceVersion = '999';
    const obs = observe(rounded, rule, key, learned.entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error(`expected changed, got ${obs.kind}`);
    const intact = { intact: true, since: '1', sinceTime: 0 };
    const plan = resolve(obs, rounded, rule, key, { guard: intact, stamp: intact, tombstone: intact }, t.stamper, Date.now());
    expect(plan).toMatchObject({ action: 'revert', attribution: 'untrusted' });
    // A change the policy does see stays vouched for by continuity.
    const changed = parseJson(JSON.stringify(rounded)) as KubeObject;
    ((changed.spec as any).source.helm.valuesObject as Record<string, unknown>).n = 7;
    const seen = observe(changed, rule, key, learned.entry, undefined, t.stamper);
    if (seen.kind !== 'changed') throw new Error(`expected changed, got ${seen.kind}`);
    expect(resolve(seen, changed, rule, key, { guard: intact, stamp: intact, tombstone: intact }, t.stamper, Date.now())).toMatchObject({ action: 'learn', attribution: 'trusted' });
  });
});
