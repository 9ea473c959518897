import { describe, expect, it } from '@jest/globals';
import jsonpatch from 'fast-json-patch';
import { entryValues, heldUntilWrite, observe, planRepair, SELECTION, STAMP_ANNOTATION, type CanonicalEntry, type Layers, type RepairInput, type RepairPlan } from '../../src/guard/index.js';
import type { KubeObject } from '../../src/kube/index.js';
import { context, keyOf, review, setTargetRevision, stamp, type TestContext } from '../helpers/admission.js';

/** The captured Application at revision 100, stamped by a trusted write and learned. */
function setup(rule?: string): { t: TestContext; object: KubeObject; key: string; entry: CanonicalEntry } {
  const t = context(rule);
  const { request } = review('alice-update-spec');
  const object = request.oldObject!;
  object.metadata!.resourceVersion = '100';
  object.metadata!.labels = { team: 'a' };
  stamp(t, request, object);
  const key = keyOf(request);
  const learned = observe(object, t.policy.rules[0]!, key, undefined, undefined, t.stamper);
  if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
  return { t, object, key, entry: learned.entry };
}

function input(t: TestContext, key: string, object: KubeObject, entry: CanonicalEntry | undefined, more: Partial<RepairInput> = {}): RepairInput {
  return {
    key,
    rule: t.policy.rules[0]!,
    object,
    deleted: false,
    entry,
    tombstone: undefined,
    leader: true,
    stamper: t.stamper,
    now: t.ctx.now,
    selectionKeys: t.policy.selectionKeys('argoproj.io', 'applications'),
    storeListed: false,
    ...more,
  };
}

/** alice's change behind admission: targetRevision changed, the stamp left as it was (now stale). */
function aliceChange(object: KubeObject): KubeObject {
  const changed = structuredClone(object);
  setTargetRevision(changed, 'my-branch');
  changed.metadata!.resourceVersion = '120';
  return changed;
}

const layers = (guard?: string, stamped?: string, tombstone?: string): Layers => ({
  guard: guard ? { intact: true, since: guard, sinceTime: 0 } : { intact: false },
  stamp: stamped ? { intact: true, since: stamped, sinceTime: 0 } : { intact: false },
  tombstone: tombstone ? { intact: true, since: tombstone, sinceTime: 0 } : { intact: false },
});

/** Applies a revert's patch as the apiserver would (the resourceVersion test included). */
function apply(object: KubeObject, plan: RepairPlan): KubeObject {
  if (plan.kind !== 'revert') throw new Error(`expected a revert, got ${plan.kind}`);
  const ops = [{ op: 'test', path: '/metadata/resourceVersion', value: object.metadata!.resourceVersion }, ...plan.ops];
  return jsonpatch.applyPatch(structuredClone(object), ops as jsonpatch.Operation[], true).newDocument;
}

describe('the repair plan (pure: what the watcher does about one version)', () => {
  it('an unstamped change asks for the layers first; with the stamp layer in force it is reverted, exactly back to the canonical object, with an Event', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    expect(planRepair(input(t, key, changed, entry))).toEqual({ kind: 'verify-layers' });
    const plan = planRepair(input(t, key, changed, entry, { layers: layers(undefined, '95') }));
    expect(plan).toMatchObject({ kind: 'revert', attribution: 'untrusted', drifted: true, detected: true, changed: ['/spec/source/targetRevision'] });
    expect(plan.kind === 'revert' && plan.report.reason).toBe('SpecDriftReverted');
    const reverted = apply(changed, plan);
    expect(reverted.spec).toEqual(object.spec);
    expect(reverted.metadata!.annotations![STAMP_ANNOTATION]).toBe(entry.stamp);
  });

  it('with the layers last seen with the guard out of force, a change only a revert can follow is planned in one pass; one that could be accepted still asks for fresh layers', () => {
    const { t, object, key, entry } = setup();
    const broken = layers(undefined, '95');
    const plan = planRepair(input(t, key, aliceChange(object), entry, { layersIfGuardBroken: broken }));
    expect(plan).toMatchObject({ kind: 'revert', attribution: 'untrusted', changed: ['/spec/source/targetRevision'] });
    expect(plan).toEqual(planRepair(input(t, key, aliceChange(object), entry, { layers: broken })));
    const accepting = setup('mode: enforce\nblindWindow: {changes: accept}');
    expect(planRepair(input(accepting.t, key, aliceChange(accepting.object), accepting.entry, { layersIfGuardBroken: broken }))).toEqual({ kind: 'verify-layers' });
    // No canonical value known: nothing to revert to, so the stale layers do not decide either.
    expect(planRepair(input(t, key, aliceChange(object), undefined, { layersIfGuardBroken: broken }))).toMatchObject({ kind: 'verify-layers' });
  });

  it('a change the guard layer vouches for (trusted, e.g. the agent writing with its own field manager) is learned and stamped anew, never reverted', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    const plan = planRepair(input(t, key, changed, entry, { layers: layers('90') }));
    expect(plan).toMatchObject({ kind: 'keep', store: true, endFight: true, purpose: 'restamp', drifted: false });
    if (plan.kind !== 'keep') return;
    expect(entryValues(plan.entry)['/spec'].source.targetRevision).toBe('my-branch');
    expect(plan.stamp).toEqual([{ op: 'add', path: expect.stringContaining('spec-guard'), value: plan.entry.stamp }]);
  });

  it('a blind window: the change is reported unattributed, and reverted (the default) or accepted (blindWindow.changes: accept)', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    const plan = planRepair(input(t, key, changed, entry, { layers: layers() }));
    expect(plan).toMatchObject({ kind: 'revert', attribution: 'unattributed', unattributed: { change: 'update', action: 'revert', report: { reason: 'UnattributedChange' }, byRevert: true } });
    // Reported once, by the revert: its one Event is the UnattributedChange, which says it was reverted.
    expect(plan.kind === 'revert' && plan.report).toEqual({ reason: 'UnattributedChange', message: expect.stringContaining('it cannot be attributed; reverted (blindWindow.changes: revert)') });
    const accepting = setup('mode: enforce\nblindWindow: {changes: accept}');
    expect(planRepair(input(accepting.t, key, aliceChange(accepting.object), accepting.entry))).toEqual({ kind: 'verify-layers' });
    expect(planRepair(input(accepting.t, key, aliceChange(accepting.object), accepting.entry, { layers: layers() }))).toMatchObject({ kind: 'keep', unattributed: { action: 'learn' } });
  });

  it('a follower keeps its cache but never writes: a change waits for the stamp, a drift is only counted', () => {
    const { t, object, key, entry } = setup();
    expect(planRepair(input(t, key, aliceChange(object), entry, { leader: false }))).toEqual({ kind: 'none' });
    const fresh = structuredClone(object);
    fresh.metadata!.resourceVersion = '130';
    expect(planRepair(input(t, key, fresh, entry, { leader: false }))).toMatchObject({ kind: 'keep', stamp: [] });
  });

  it('warn mode reports the change and leaves it in place', () => {
    const { t, object, key, entry } = setup('mode: warn');
    const plan = planRepair(input(t, key, aliceChange(object), entry, { layers: layers(undefined, '95') }));
    expect(plan).toMatchObject({ kind: 'warn', drifted: false, report: { reason: 'SpecDriftDetected' } });
  });

  it('an object in sync is kept; from a list after a layer came into force its raised revision is stored', () => {
    const { t, object, key, entry } = setup();
    const same = structuredClone(object);
    same.metadata!.resourceVersion = '130';
    expect(planRepair(input(t, key, same, entry, { listedAt: '150' }))).toMatchObject({ kind: 'keep', store: false, entry: { knownAt: '150' }, stamp: [] });
    expect(planRepair(input(t, key, same, entry, { listedAt: '150', storeListed: true }))).toMatchObject({ kind: 'keep', store: true });
    // Only the stamp was removed: it is put back.
    delete same.metadata!.annotations![STAMP_ANNOTATION];
    expect(planRepair(input(t, key, same, entry))).toMatchObject({ kind: 'keep', purpose: 'stamp', stamp: [{ op: 'add', value: entry.stamp }] });
  });

  it('a delete: forgotten with a confirming tombstone; recreated from the canonical copy without one; forgotten when the guard layer held', () => {
    const { t, object, key, entry } = setup();
    const ghost = { metadata: { name: object.metadata!.name, namespace: object.metadata!.namespace, uid: object.metadata!.uid } };
    const tombstone = { uid: object.metadata!.uid, at: new Date(t.ctx.now).toISOString() };
    expect(planRepair(input(t, key, ghost, entry, { deleted: true, tombstone }))).toMatchObject({ kind: 'forget', tombstone });
    expect(planRepair(input(t, key, ghost, entry, { deleted: true }))).toEqual({ kind: 'verify-layers' });
    const plan = planRepair(input(t, key, ghost, entry, { deleted: true, layers: layers(undefined, undefined, '95') }));
    expect(plan.kind).toBe('recreate');
    if (plan.kind !== 'recreate') return;
    expect(plan.body).toMatchObject({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: object.metadata!.name, namespace: object.metadata!.namespace, labels: { team: 'a' } } });
    expect((plan.body as { spec: unknown }).spec).toEqual(object.spec);
    expect(planRepair(input(t, key, ghost, entry, { deleted: true, layers: layers('90', undefined, '90') }))).toMatchObject({ kind: 'forget' });
    expect(planRepair(input(t, key, ghost, entry, { deleted: true, leader: false }))).toEqual({ kind: 'none' });
  });

  it('a tombstone of another incarnation (another uid) does not confirm a delete', () => {
    const { t, object, key, entry } = setup();
    const ghost = { metadata: { name: object.metadata!.name, namespace: object.metadata!.namespace, uid: object.metadata!.uid } };
    const forged = { uid: 'some-other-uid', at: new Date(t.ctx.now).toISOString() };
    expect(planRepair(input(t, key, ghost, entry, { deleted: true, tombstone: forged, layers: layers(undefined, undefined, '95') })).kind).toBe('recreate');
  });

  it('an object moved out of its selection behind admission is moved back, its labels and spec restored, unless a trusted write moved it', () => {
    const { t, object, key, entry } = setup('mode: enforce\nlabelSelector: {matchLabels: {team: a}}');
    const escaped = aliceChange(object);
    escaped.metadata!.labels = { team: 'b' };
    expect(planRepair(input(t, key, escaped, entry))).toEqual({ kind: 'verify-layers' });
    const plan = planRepair(input(t, key, escaped, entry, { layers: layers(undefined, '95') }));
    expect(plan).toMatchObject({ kind: 'revert', changed: ['/spec/source/targetRevision', SELECTION] });
    const back = apply(escaped, plan);
    expect(back.metadata!.labels).toEqual({ team: 'a' });
    expect(back.spec).toEqual(object.spec);
    expect(planRepair(input(t, key, escaped, entry, { layers: layers('90') }))).toMatchObject({ kind: 'forget' });
  });
});

describe('a version the watch showed right after the canonical one, without a gap (round 8: a copy known canonical before a period began)', () => {
  // The entry is known canonical at 100; the next write to the object is 120. A guard period
  // began at 110, after the copy was last seen: its relist (which raises the known revision)
  // has not reached the object yet.
  const periodFrom110 = layers('110');
  const endedPeriod = (until: string): Layers => ({ ...layers(), guard: { intact: false, verified: [{ since: '110', sinceTime: 0, until }] } });

  it('a write made within a live guard period is trusted (learned, never reverted) when it directly follows the canonical version', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    // Without the watch's order, every revision since 100 is in question: not attributable.
    expect(planRepair(input(t, key, changed, entry, { layers: periodFrom110 }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
    const plan = planRepair(input(t, key, changed, entry, { layers: periodFrom110, follows: '100' }));
    expect(plan).toMatchObject({ kind: 'keep', store: true, purpose: 'restamp', drifted: false });
    expect(plan.unattributed).toBeUndefined();
    if (plan.kind === 'keep') expect(entryValues(plan.entry)['/spec'].source.targetRevision).toBe('my-branch');
  });

  it('a write made within a period since ended is trusted likewise; one made after it was last verified is not', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    expect(planRepair(input(t, key, changed, entry, { layers: endedPeriod('130'), follows: '100' }))).toMatchObject({ kind: 'keep', store: true });
    expect(planRepair(input(t, key, changed, entry, { layers: endedPeriod('115'), follows: '100' }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
  });

  it('vouches for nothing when the version before was not the canonical one, the write came before the period, or the copy is another', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    // An earlier write (105, in the blind window) came between: it may hold the change.
    expect(planRepair(input(t, key, changed, entry, { layers: periodFrom110, follows: '105' }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
    // The write itself (120) came before the period (from 125 on).
    expect(planRepair(input(t, key, changed, entry, { layers: layers('125'), follows: '100' }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
    // A copy recreated under another uid is not the canonical copy's successor.
    const other = structuredClone(changed);
    other.metadata!.uid = 'another-uid';
    expect(heldUntilWrite(entry, other, '100')).toBe(entry);
    expect(heldUntilWrite(entry, changed, '100')).toMatchObject({ knownAt: '119' });
    expect(planRepair(input(t, key, other, entry, { layers: periodFrom110, follows: '100' }))).toEqual(planRepair(input(t, key, other, entry, { layers: periodFrom110 })));
    // Revisions that are not numbers order nothing.
    const opaque = structuredClone(changed);
    opaque.metadata!.resourceVersion = 'abc';
    expect(planRepair(input(t, key, opaque, entry, { layers: periodFrom110, follows: '100' }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
  });

  it('tells an untrusted write apart too: made while the stamp layer held, unstamped, it is reverted as untrusted, not unattributed', () => {
    const { t, object, key, entry } = setup();
    const changed = aliceChange(object);
    expect(planRepair(input(t, key, changed, entry, { layers: layers(undefined, '110') }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
    const plan = planRepair(input(t, key, changed, entry, { layers: layers(undefined, '110'), follows: '100' }));
    expect(plan).toMatchObject({ kind: 'revert', attribution: 'untrusted' });
    expect(plan.unattributed).toBeUndefined();
  });
});

describe('a value nested deeper than a guard compares', () => {
  const deepened = (object: KubeObject) => {
    const deep = structuredClone(object);
    let value: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 2000; i++) value = { a: value };
    (deep.spec as Record<string, unknown>).source = value;
    deep.metadata!.resourceVersion = '130';
    return deep;
  };

  it('written while the guard layer vouches for it (the trusted writer, admitted unstamped) is forgotten and reported, never reverted', () => {
    const { t, object, key, entry } = setup();
    const plan = planRepair(input(t, key, deepened(object), entry, { layers: layers('50') }));
    expect(plan).toMatchObject({ kind: 'forget', report: { reason: 'CannotBeGuarded' } });
  });

  it('written in a blind window or past the stamp layer alone is reverted to the known value', () => {
    const { t, object, key, entry } = setup();
    expect(planRepair(input(t, key, deepened(object), entry, { layers: layers(undefined, '50') }))).toMatchObject({ kind: 'revert', attribution: 'untrusted' });
    expect(planRepair(input(t, key, deepened(object), entry, { layers: layers() }))).toMatchObject({ kind: 'revert', attribution: 'unattributed' });
    expect(planRepair(input(t, key, deepened(object), entry))).toEqual({ kind: 'verify-layers' });
  });
});

describe('an operation in progress that no one asked for (Argo CD resumes from status.operationState)', () => {
  const MANIFEST = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hers"}}';
  const withState = (object: KubeObject, operation: object, stateOperation: object, phase = 'Running') => {
    const next = structuredClone(object);
    next.operation = operation;
    next.status = { operationState: { phase, operation: stateOperation, startedAt: '2026-12-04T10:00:00Z' } };
    return next;
  };

  it('is reported when it deploys what neither .operation nor the canonical one says', () => {
    const { t, object, key, entry } = setup();
    const forged = withState(object, { sync: { revision: 'v2' } }, { sync: { manifests: [MANIFEST] } });
    const plan = planRepair(input(t, key, forged, entry, { layers: layers('50') }));
    expect(plan.unattributed).toMatchObject({ changed: ['/status/operationState'], action: 'report', report: { reason: 'ForgedOperationState' } });
  });

  it('is not reported for the controller’s own state (the operation it was given, even with its revision resolved), nor once completed', () => {
    const { t, object, key, entry } = setup();
    const own = withState(object, { sync: { revision: 'v2' } }, { sync: { revision: '0123abcd' } });
    expect(planRepair(input(t, key, own, entry, { layers: layers('50') })).unattributed).toBeUndefined();
    const done = withState(object, { sync: { revision: 'v2' } }, { sync: { manifests: [MANIFEST] } }, 'Succeeded');
    expect(planRepair(input(t, key, done, entry, { layers: layers('50') })).unattributed).toBeUndefined();
    // A follower reports nothing: the leader does.
    const forged = withState(object, { sync: { revision: 'v2' } }, { sync: { manifests: [MANIFEST] } });
    expect(planRepair(input(t, key, forged, entry, { leader: false })).unattributed).toBeUndefined();
  });
});
