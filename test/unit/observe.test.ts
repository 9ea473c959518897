import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from '@jest/globals';
import { attributeChange, attributeDelete, entryValues, observe, valuesText, packValues, resolve, STAMP_ANNOTATION, UNKNOWN_LAYERS, type CanonicalEntry, type Layers } from '../../src/guard/index.js';
import type { KubeObject } from '../../src/kube/index.js';
import { context, keyOf, review, setTargetRevision, stamp, type TestContext } from '../helpers/admission.js';

/** The captured object at revision 100, stamped, learned: the canonical entry (known at 100). */
function setup(): { t: TestContext; object: KubeObject; key: string; entry: CanonicalEntry } {
  const t = context();
  const { request } = review('alice-update-spec');
  const object = request.oldObject!;
  object.metadata!.resourceVersion = '100';
  stamp(t, request, object);
  const key = keyOf(request);
  const learned = observe(object, t.policy.rules[0]!, key, undefined, undefined, t.stamper);
  if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
  return { t, object, key, entry: learned.entry };
}

/** A later version (revision 120) with targetRevision changed and no fresh stamp. */
function unstampedChange(object: KubeObject, revision = 'evil'): KubeObject {
  const changed = structuredClone(object);
  setTargetRevision(changed, revision);
  changed.metadata!.resourceVersion = '120';
  return changed;
}

const layers = (guard: string | undefined, stamp: string | undefined, tombstone: string | undefined = guard): Layers => ({
  guard: guard ? { intact: true, since: guard, sinceTime: 0 } : { intact: false },
  stamp: stamp ? { intact: true, since: stamp, sinceTime: 0 } : { intact: false },
  tombstone: tombstone ? { intact: true, since: tombstone, sinceTime: 0 } : { intact: false },
});

describe('observe (what the watcher makes of an object)', () => {
  it('learns a validly, freshly stamped object, with its sequence and revision, keeping its annotations but last-applied', () => {
    const { t, entry, object } = setup();
    expect(entry.stamp).toBe(object.metadata!.annotations![STAMP_ANNOTATION]);
    expect(entry.seq).toBe(t.ctx.now - 1000);
    expect(entry.knownAt).toBe('100');
    expect(entryValues(entry)['/spec'].source.targetRevision).toBe('HEAD');
    expect(entry.annotations).toEqual({ [STAMP_ANNOTATION]: entry.stamp });
  });

  it('labels and annotations are learned from a trusted write only, within a budget: anyone’s later 200 KB of them, the stamp unchanged, are not copied into the entry (nor into a recreated copy)', () => {
    const { t, entry, object, key } = setup();
    const edited = structuredClone(object);
    edited.metadata!.resourceVersion = '130';
    edited.metadata!.labels = { ...edited.metadata!.labels, mallory: 'was-here' };
    edited.metadata!.annotations = { ...edited.metadata!.annotations, bulk: 'x'.repeat(200_000) };
    const seen = observe(edited, t.policy.rules[0]!, key, entry, undefined, t.stamper);
    const after = seen.kind === 'learn' || seen.kind === 'in-sync' ? seen.entry : undefined;
    expect(after?.labels).toEqual(entry.labels);
    expect(after?.annotations).toEqual(entry.annotations);
    // A trusted write that carries large annotations: kept up to the budget, the stamp always.
    const { request } = review('alice-update-spec');
    const big = request.oldObject!;
    big.metadata!.annotations = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`a${i}`, 'y'.repeat(1000)]));
    stamp(t, request, big);
    const learned = observe(big, t.policy.rules[0]!, key, undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
    expect(JSON.stringify(learned.entry.annotations).length).toBeLessThan(17 * 1024 + 200);
    expect(learned.entry.annotations![STAMP_ANNOTATION]).toBe(big.metadata!.annotations![STAMP_ANNOTATION]);
  });

  it('an unchanged stamped object seen again (a status update) is in sync and shares the known entry\'s value: a store holding the earlier entry does not make the value take twice the memory', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const t = context();
    const { request } = review('alice-update-spec');
    const object = request.oldObject!;
    object.metadata!.resourceVersion = '100';
    // ~5 KB of guarded value, as an Application with Helm parameters has.
    (object.spec as { source: Record<string, unknown> }).source.helm = { parameters: Array.from({ length: 60 }, (_, p) => ({ name: `c${p}.replicas`, value: `${p}-${'x'.repeat(60)}` })) };
    stamp(t, request, object);
    const rule = t.policy.rules[0]!;
    const key = keyOf(request);
    const first = observe(object, rule, key, undefined, undefined, t.stamper);
    if (first.kind !== 'learn') throw new Error(`expected learn, got ${first.kind}`);
    expect(valuesText(first.entry.valuesJson).length).toBeGreaterThan(5000);
    gc();
    const before = process.memoryUsage().heapUsed;
    // 2,000 later versions (status updates), each learned while the first entry is kept, as a store keeps what it wrote.
    const learned = Array.from({ length: 2000 }, (_, i) => {
      const later = { ...object, metadata: { ...object.metadata, resourceVersion: String(200 + i) }, status: { reconciledAt: String(i) } };
      const seen = observe(later, rule, key, first.entry, undefined, t.stamper);
      if (seen.kind !== 'in-sync') throw new Error(`expected in-sync, got ${seen.kind}`);
      expect(seen.entry.knownAt).toBe(String(200 + i));
      return seen.entry;
    });
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Each value held again would be 2,000 × 5 KB = 10 MB; shared, the entries are a few hundred bytes each.
    expect(grown).toBeLessThan(2000 * 1024);
    expect(learned[1999]!.annotations).toBe(first.entry.annotations);
  });

  it('the stamped value seen again on the same copy is in sync without verifying the stamp again, never lowering the revision it is known at; a tombstone takes the long way', () => {
    const { t, object, key, entry } = setup();
    let reads = 0;
    const counting = Object.assign(Object.create(t.stamper) as typeof t.stamper, { read: (...args: Parameters<typeof t.stamper.read>) => (reads++, t.stamper.read(...args)) });
    const listed = { ...entry, knownAt: '500' };
    const later = { ...object, metadata: { ...object.metadata, resourceVersion: '300' }, status: { reconciledAt: 'now' } };
    expect(observe(later, t.policy.rules[0]!, key, listed, undefined, counting)).toMatchObject({ kind: 'in-sync', restoreStamp: false, entry: { knownAt: '500', resourceVersion: '300', stamp: entry.stamp } });
    expect(reads).toBe(0);
    observe(later, t.policy.rules[0]!, key, listed, { at: new Date(0).toISOString() }, counting);
    expect(reads).toBe(1);
  });

  it('a guarded value nested deeper than the limit is compared with a known canonical value (too deep), never a throw', () => {
    const { t, object, key, entry } = setup();
    const deep = structuredClone(object);
    let value: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 2000; i++) value = { a: value };
    (deep.spec as Record<string, unknown>).source = value;
    expect(observe(deep, t.policy.rules[0]!, key, entry, undefined, t.stamper)).toEqual({ kind: 'too-deep', entry, changed: t.policy.rules[0]!.view.pointers });
    expect(observe(deep, t.policy.rules[0]!, key, undefined, undefined, t.stamper)).toEqual({ kind: 'unknown' });
  });

  it('an unstamped change is for attribution to judge, with the changed pointers; managedFields play no part', () => {
    const { t, object, key, entry } = setup();
    const changed = unstampedChange(object);
    delete changed.metadata!.annotations![STAMP_ANNOTATION];
    // A planted managedFields entry of the agent, dated far ahead, changes nothing.
    changed.metadata!.managedFields = [{ manager: 'argocd-agent', operation: 'Update', time: '2099-01-01T00:00:00Z', fieldsV1: { 'f:spec': {} } }];
    expect(observe(changed, t.policy.rules[0]!, key, entry, undefined, t.stamper)).toMatchObject({
      kind: 'changed',
      entry,
      previous: entry,
      changed: ['/spec/source/targetRevision'],
    });
  });

  it('is in sync when only the stamp was removed (asks to restore it), and raises the revision it is known at', () => {
    const { t, object, key, entry } = setup();
    const unstamped = structuredClone(object);
    delete unstamped.metadata!.annotations![STAMP_ANNOTATION];
    unstamped.metadata!.resourceVersion = '130';
    expect(observe(unstamped, t.policy.rules[0]!, key, entry, undefined, t.stamper)).toMatchObject({ kind: 'in-sync', restoreStamp: true, entry: { knownAt: '130' } });
  });

  it('ignores objects being deleted', () => {
    const { t, object, key } = setup();
    const deleting = { ...object, metadata: { ...object.metadata, deletionTimestamp: '2026-12-02T10:00:00Z' } };
    expect(observe(deleting, t.policy.rules[0]!, key, undefined, undefined, t.stamper)).toEqual({ kind: 'ignore' });
  });
});

describe('stamp freshness: a replayed stamp proves nothing', () => {
  it('an older spec written back with its older stamp, after a newer trusted write, is a change, not canonical', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const key = keyOf(request);
    const rule = t.policy.rules[0]!;
    const older = structuredClone(request.oldObject!);
    stamp(t, request, older, t.ctx.now - 5000);
    const newer = unstampedChange(older, 'v2');
    stamp(t, request, newer, t.ctx.now - 1000);
    const learned = observe(newer, rule, key, undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error('expected learn');
    const replay = { ...structuredClone(older), metadata: { ...older.metadata, resourceVersion: '140' } };
    expect(observe(replay, rule, key, learned.entry, undefined, t.stamper).kind).toBe('changed');
  });

  it('a deleted object recreated from a saved copy, stamp included, is not canonical: within the tombstone’s time and after it', () => {
    const { t, object, key, entry } = setup();
    const rule = t.policy.rules[0]!;
    const copy = structuredClone(object);
    copy.metadata!.uid = 'a-new-uid';
    // Recreated a moment after the trusted delete: the tombstone is still there.
    const tombstone = { uid: object.metadata!.uid, at: new Date(t.ctx.now).toISOString() };
    copy.metadata!.creationTimestamp = new Date(t.ctx.now + 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    expect(observe(copy, rule, key, undefined, tombstone, t.stamper).kind).toBe('changed');
    // Or the same copy of the old incarnation, whose entry is still known.
    expect(observe(copy, rule, key, entry, undefined, t.stamper).kind).not.toBe('learn');
    // Long after: the tombstone and the entry are gone, its creation time gives it away.
    copy.metadata!.creationTimestamp = new Date(t.ctx.now + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    expect(observe(copy, rule, key, undefined, undefined, t.stamper).kind).toBe('changed');
  });

  it('a stamp for another object, or with its sequence altered, is not valid', () => {
    const { t, object, key } = setup();
    const stampValue = object.metadata!.annotations![STAMP_ANNOTATION]!;
    expect(t.stamper.read(stampValue, `${key}x`)).toBeUndefined();
    const [v, hash, seq, mac] = stampValue.split('.');
    expect(t.stamper.read([v, hash, String(Number(seq) + 1), mac].join('.'), key)).toBeUndefined();
    expect(t.stamper.read([v, hash, `0${seq}`, mac].join('.'), key)).toBeUndefined();
  });
});

describe('attribution by continuity', () => {
  it('guard layer in force since before the copy was last canonical: the unstamped change is trusted, learned and stamped anew', () => {
    const { t, object, key, entry } = setup();
    const change = unstampedChange(object, 'v3');
    const obs = observe(change, t.policy.rules[0]!, key, entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error('expected changed');
    const plan = resolve(obs, change, t.policy.rules[0]!, key, layers('90', undefined), t.stamper, t.ctx.now);
    expect(plan).toMatchObject({ action: 'learn', attribution: 'trusted' });
    if (plan.action !== 'learn') return;
    expect(t.stamper.read(plan.entry.stamp, key)).toEqual({ hash: plan.entry.viewHash, seq: t.ctx.now });
  });

  it('guard layer placed after the copy was last canonical (a gap): not trusted; with the stamp layer in force, untrusted and reverted', () => {
    const { t, object, key, entry } = setup();
    const change = unstampedChange(object);
    const obs = observe(change, t.policy.rules[0]!, key, entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error('expected changed');
    expect(resolve(obs, change, t.policy.rules[0]!, key, layers('110', '95'), t.stamper, t.ctx.now)).toMatchObject({ action: 'revert', attribution: 'untrusted', entry });
  });

  it('no layer vouches (a blind window): reverted by default, accepted when the rule says so; never from anything the object says', () => {
    const { t, object, key, entry } = setup();
    const change = unstampedChange(object);
    const obs = observe(change, t.policy.rules[0]!, key, entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error('expected changed');
    expect(resolve(obs, change, t.policy.rules[0]!, key, UNKNOWN_LAYERS, t.stamper, t.ctx.now)).toMatchObject({ action: 'revert', attribution: 'unattributed' });
    const accepting = context('mode: enforce\nblindWindow: {changes: accept}');
    expect(resolve(obs, change, accepting.policy.rules[0]!, key, UNKNOWN_LAYERS, t.stamper, t.ctx.now)).toMatchObject({ action: 'learn', attribution: 'unattributed' });
  });

  it('in warn mode the guard layer vouches for nothing (untrusted writes are admitted)', () => {
    const { object, key, entry } = setup();
    const warn = context('mode: warn');
    expect(attributeChange(layers('90', undefined), entry, unstampedChange(object), false)).toBe('trusted');
    const obs = observe(unstampedChange(object), warn.policy.rules[0]!, key, entry, undefined, warn.stamper);
    if (obs.kind !== 'changed') throw new Error('expected changed');
    expect(resolve(obs, unstampedChange(object), warn.policy.rules[0]!, key, layers('90', undefined), warn.stamper, warn.ctx.now).attribution).toBe('unattributed');
  });

  it('a new object: trusted when created after the guard layer came into force and untrusted creates are refused', () => {
    const { object } = setup();
    const created = structuredClone(object);
    created.metadata!.creationTimestamp = '2026-12-02T18:26:10Z';
    const since = (iso: string): Layers => ({ ...UNKNOWN_LAYERS, guard: { intact: true, since: '1', sinceTime: Date.parse(iso) } });
    expect(attributeChange(since('2026-12-02T18:26:00Z'), undefined, created, false)).toBe('trusted');
    expect(attributeChange(since('2026-12-02T18:26:00Z'), undefined, created, true)).toBe('unattributed');
    // Within the one-second resolution of creationTimestamp (and a second of margin): not provably later.
    expect(attributeChange(since('2026-12-02T18:26:09.500Z'), undefined, created, false)).toBe('unattributed');
  });

  it('a period the guard layer was verified in force, since ended: vouches for a change written within it to a copy known canonical at its start; not for one written after it was last verified', () => {
    const { t, object, key, entry } = setup();
    const change = unstampedChange(object, 'v3'); // known at 100, written at 120
    // A blind window since (the layer records a new version from 130 on); before it, verified 90 to 125.
    const after = (until: string, since = '90'): Layers => ({ ...layers('130', '95'), guard: { intact: true, since: '130', sinceTime: 0, verified: [{ since: '130', sinceTime: 0, until: '140' }, { since, sinceTime: 0, until }] } });
    const obs = observe(change, t.policy.rules[0]!, key, entry, undefined, t.stamper);
    if (obs.kind !== 'changed') throw new Error('expected changed');
    expect(resolve(obs, change, t.policy.rules[0]!, key, after('125'), t.stamper, t.ctx.now)).toMatchObject({ action: 'learn', attribution: 'trusted' });
    // Verified only up to 119: the write at 120 may have come after the layer changed.
    expect(resolve(obs, change, t.policy.rules[0]!, key, after('119'), t.stamper, t.ctx.now)).toMatchObject({ action: 'revert', attribution: 'untrusted' });
    // The period began after the copy was last known canonical (101): a change before it is not vouched for.
    expect(attributeChange(after('125', '101'), entry, change, false)).toBe('untrusted');
    // The layer broken now, the ended period still vouches; revisions that are not numbers never do.
    expect(attributeChange({ ...UNKNOWN_LAYERS, guard: { intact: false, verified: [{ since: '90', sinceTime: 0, until: '125' }] } }, entry, change, false)).toBe('trusted');
    expect(attributeChange({ ...UNKNOWN_LAYERS, guard: { intact: false, verified: [{ since: '90', sinceTime: 0, until: 'x' }] } }, entry, change, false)).toBe('unattributed');
    expect(attributeChange({ ...UNKNOWN_LAYERS, guard: { intact: false, verified: [{ since: '90', sinceTime: 0, until: '125' }] } }, entry, { ...change, metadata: { ...change.metadata, resourceVersion: 'x' } }, false)).toBe('unattributed');
    // In warn mode the guard layer vouches for nothing, ended periods included.
    const warn = context('mode: warn');
    const warned = observe(change, warn.policy.rules[0]!, key, entry, undefined, warn.stamper);
    if (warned.kind !== 'changed') throw new Error('expected changed');
    expect(resolve(warned, change, warn.policy.rules[0]!, key, after('125'), warn.stamper, warn.ctx.now).attribution).toBe('untrusted');
  });

  it('a new object created and last written within an ended verified period is trusted where untrusted creates are refused', () => {
    const { object } = setup();
    const created = structuredClone(object); // written at 100
    created.metadata!.creationTimestamp = '2026-12-02T18:26:10Z';
    const ended = (until: string, sinceIso = '2026-12-02T18:26:00Z'): Layers => ({ ...UNKNOWN_LAYERS, guard: { intact: false, verified: [{ since: '1', sinceTime: Date.parse(sinceIso), until }] } });
    expect(attributeChange(ended('100'), undefined, created, false)).toBe('trusted');
    expect(attributeChange(ended('100'), undefined, created, true)).toBe('unattributed');
    expect(attributeChange(ended('99'), undefined, created, false)).toBe('unattributed');
    expect(attributeChange(ended('100', '2026-12-02T18:26:09.500Z'), undefined, created, false)).toBe('unattributed');
  });

  it('a delete without a tombstone: trusted under the guard layer, untrusted under the tombstone layer alone, else unattributed', () => {
    const { entry } = setup();
    expect(attributeDelete(layers('90', undefined, '90'), entry)).toBe('trusted');
    expect(attributeDelete(layers(undefined, undefined, '90'), entry)).toBe('untrusted');
    expect(attributeDelete(layers('110', undefined, '110'), entry)).toBe('unattributed');
    // Revisions that are not numbers vouch for nothing.
    expect(attributeDelete(layers('x', undefined, 'y'), entry)).toBe('unattributed');
  });
});

describe('packed canonical values', () => {
  it('hold a 5 KB value in a fraction of it, read back exactly, and serialize as the JSON text the stores always wrote', () => {
    const json = JSON.stringify({ '/spec': { source: { helm: { parameters: Array.from({ length: 80 }, (_, p) => ({ name: `component${p}.replicas`, value: `${p}-${'x'.repeat(20)}` })) } } } });
    const packed = packValues(json);
    expect((packed as unknown as { deflated: string }).deflated.length).toBeLessThan(json.length / 4);
    expect(packed.json).toBe(json);
    const entry = { viewHash: 'h', valuesJson: packed, stamp: 's', resourceVersion: '1', uid: 'u', apiVersion: 'v1', kind: 'K' };
    expect(JSON.parse(JSON.stringify(entry)).valuesJson).toBe(json);
    expect(entryValues(entry)).toEqual(JSON.parse(json));
    // The same text again keeps the one copy; another text is packed anew.
    expect(packValues(json, packed)).toBe(packed);
    expect(packValues(json.replace('x', 'y'), packed)).not.toBe(packed);
    expect(valuesText(json)).toBe(json);
  });
});
