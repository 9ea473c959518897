import { describe, expect, it } from '@jest/globals';
import { lastGuardedWriter, observe, STAMP_ANNOTATION, type CanonicalEntry } from '../../src/sync/index.js';
import type { KubeObject, ManagedFieldsEntry } from '../../src/webhook/index.js';
import { context, keyOf, review, setTargetRevision, stamp, type TestContext } from '../helpers/admission.js';

const TRUSTED = new Set(['argocd-agent']);
const specEntry = (manager: string, time: string, extra: Partial<ManagedFieldsEntry> = {}): ManagedFieldsEntry => ({
  manager,
  operation: 'Update',
  time,
  fieldsV1: { 'f:spec': { 'f:source': { 'f:targetRevision': {} } } },
  ...extra,
});

describe('lastGuardedWriter', () => {
  it('takes the newest entry that owns a guarded field', () => {
    const fields = [specEntry('argocd-agent', '2026-12-02T10:00:00Z'), specEntry('kubectl-patch', '2026-12-02T10:00:05Z')];
    expect(lastGuardedWriter(fields, ['/spec'], TRUSTED)).toEqual({ manager: 'kubectl-patch', trusted: false });
    expect(lastGuardedWriter(fields.reverse().map((f, i) => ({ ...f, time: `2026-12-02T10:00:0${i}Z` })), ['/spec'], TRUSTED)).toEqual({
      manager: 'argocd-agent',
      trusted: true,
    });
  });

  it('ignores status-only and subresource entries', () => {
    const fields = [
      specEntry('argocd-agent', '2026-12-02T10:00:00Z'),
      { manager: 'argocd-application-controller', time: '2026-12-02T10:00:09Z', fieldsV1: { 'f:status': {} } },
      specEntry('other', '2026-12-02T10:00:09Z', { subresource: 'status' }),
    ];
    expect(lastGuardedWriter(fields, ['/spec'], TRUSTED)).toEqual({ manager: 'argocd-agent', trusted: true });
  });

  it('is not trusted when an untrusted writer shares the newest second', () => {
    const fields = [specEntry('argocd-agent', '2026-12-02T10:00:00Z'), specEntry('kubectl-edit', '2026-12-02T10:00:00Z')];
    expect(lastGuardedWriter(fields, ['/spec'], TRUSTED).trusted).toBe(false);
    expect(lastGuardedWriter(undefined, ['/spec'], TRUSTED)).toEqual({ manager: undefined, trusted: false });
  });
});

describe('observe (what the watcher makes of an object)', () => {
  function setup(): { t: TestContext; object: KubeObject; key: string; entry: CanonicalEntry } {
    const t = context();
    const { request } = review('alice-update-spec');
    const object = request.oldObject!;
    stamp(t, request, object);
    const key = keyOf(request);
    const learned = observe(object, t.policy.rules[0]!, key, undefined, t.stamper, TRUSTED);
    if (learned.kind !== 'learn') throw new Error(`expected learn, got ${learned.kind}`);
    return { t, object, key, entry: learned.entry };
  }

  it('learns a validly stamped object, keeping its annotations but last-applied', () => {
    const { entry, object } = setup();
    expect(entry.stamp).toBe(object.metadata!.annotations![STAMP_ANNOTATION]);
    expect(JSON.parse(entry.valuesJson)['/spec'].source.targetRevision).toBe('HEAD');
    expect(entry.annotations).toEqual({ [STAMP_ANNOTATION]: entry.stamp });
  });

  it('a guarded value nested deeper than the limit is drift from a known canonical value, never a throw', () => {
    const { t, object, key, entry } = setup();
    const deep = structuredClone(object);
    let value: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 2000; i++) value = { a: value };
    (deep.spec as Record<string, unknown>).source = value;
    expect(observe(deep, t.policy.rules[0]!, key, entry, t.stamper, TRUSTED)).toEqual({ kind: 'drift', entry, changed: ['/spec'], by: undefined });
    expect(observe(deep, t.policy.rules[0]!, key, undefined, t.stamper, TRUSTED)).toEqual({ kind: 'unknown', by: undefined });
  });

  it('reports drift with the changed pointers and the last writer', () => {
    const { t, object, key, entry } = setup();
    const drifted = structuredClone(object);
    setTargetRevision(drifted, 'evil');
    drifted.metadata!.managedFields = [specEntry('kubectl-patch', '2026-12-02T10:00:00Z')];
    expect(observe(drifted, t.policy.rules[0]!, key, entry, t.stamper, TRUSTED)).toEqual({
      kind: 'drift',
      entry,
      changed: ['/spec/source/targetRevision'],
      by: 'kubectl-patch',
    });
  });

  it('accepts an unstamped change by a trusted field manager and asks for a new stamp', () => {
    const { t, object, key, entry } = setup();
    const agentWrite = structuredClone(object);
    setTargetRevision(agentWrite, 'v3');
    agentWrite.metadata!.managedFields = [specEntry('argocd-agent', '2026-12-02T10:00:00Z')];
    const result = observe(agentWrite, t.policy.rules[0]!, key, entry, t.stamper, TRUSTED);
    expect(result.kind).toBe('learn');
    if (result.kind !== 'learn') return;
    expect(result.restamp).toBe(true);
    expect(t.stamper.verify(result.entry.stamp, key)).toBe(result.entry.viewHash);
    expect(result.entry.viewHash).not.toBe(entry.viewHash);
  });

  it('is in sync when only the stamp was removed, and asks to restore it', () => {
    const { t, object, key, entry } = setup();
    const unstamped = structuredClone(object);
    delete unstamped.metadata!.annotations![STAMP_ANNOTATION];
    expect(observe(unstamped, t.policy.rules[0]!, key, entry, t.stamper, TRUSTED)).toMatchObject({ kind: 'in-sync', restoreStamp: true });
    expect(observe(object, t.policy.rules[0]!, key, entry, t.stamper, TRUSTED).kind).toBe('learn');
  });

  it('knows nothing of an unstamped object with no canonical value, and ignores objects being deleted', () => {
    const { t, object, key } = setup();
    const unstamped = structuredClone(object);
    delete unstamped.metadata!.annotations![STAMP_ANNOTATION];
    unstamped.metadata!.managedFields = [specEntry('kubectl-create', '2026-12-02T10:00:00Z')];
    expect(observe(unstamped, t.policy.rules[0]!, key, undefined, t.stamper, TRUSTED)).toEqual({ kind: 'unknown', by: 'kubectl-create' });
    const deleting = { ...object, metadata: { ...object.metadata, deletionTimestamp: '2026-12-02T10:00:00Z' } };
    expect(observe(deleting, t.policy.rules[0]!, key, undefined, t.stamper, TRUSTED)).toEqual({ kind: 'ignore' });
  });
});
