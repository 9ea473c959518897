import { describe, expect, it } from '@jest/globals';
import { observe, STAMP_ANNOTATION, STAMP_POINTER } from '../../src/guard/index.js';
import { decide, Policy } from '../../src/guard/index.js';
import { parseConfig } from '../../src/config/index.js';
import { reviewResponse } from '../../src/webhook/index.js';
import type { KubeObject } from '../../src/kube/index.js';
import { AGENT, SELF, applyDecision, configYaml, context, keyOf, review, setTargetRevision, stamp } from '../helpers/admission.js';

const spec = (o: KubeObject | null | undefined) => o?.spec as Record<string, unknown>;

/** alice's captured UPDATE (targetRevision HEAD → v2) against a stamped oldObject. */
function aliceUpdate(rule?: string) {
  const t = context(rule);
  const { request } = review('alice-update-spec');
  stamp(t, request, request.oldObject!);
  request.object!.metadata!.annotations![STAMP_ANNOTATION] = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
  return { t, request };
}

describe('trusted writers', () => {
  it('stamps the agent CREATE on /mutate, creating the annotation with a stamp valid for the view', () => {
    const t = context();
    const { request } = review('agent-create');
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'trusted' });
    const stored = applyDecision(request.object!, decision);
    const value = stored.metadata!.annotations![STAMP_ANNOTATION]!;
    const rule = t.policy.rules[0]!;
    expect(t.stamper.verify(value, keyOf(request))).toBe(rule.view.of(stored).hash);
    // The other annotation is untouched.
    expect(stored.metadata!.annotations!['kubectl.kubernetes.io/last-applied-configuration']).toBeDefined();
  });

  it('creates metadata.annotations when the object has none', () => {
    const t = context();
    const { request } = review('agent-create');
    delete request.object!.metadata!.annotations;
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision.kind === 'allow' && decision.patch).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { [STAMP_ANNOTATION]: expect.stringMatching(/^v2\.[0-9a-f]{64}\.\d+\./) } },
    ]);
    expect(applyDecision(request.object!, decision).metadata!.annotations![STAMP_ANNOTATION]).toMatch(/^v2\./);
  });

  it('keeps the stamp of an update that leaves the view and the stamp as they were; stamps every create anew; no patch on /validate', () => {
    const { t, request } = aliceUpdate();
    request.userInfo = { username: AGENT, groups: [] };
    request.object!.spec = structuredClone(request.oldObject!.spec);
    expect(decide(request, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'trusted' });
    const create = review('agent-create').request;
    stamp(t, create, create.object!);
    const decision = decide(create, 'mutate', t.ctx);
    const restamped = applyDecision(create.object!, decision).metadata!.annotations![STAMP_ANNOTATION]!;
    expect(t.stamper.read(restamped, keyOf(create))!.seq).toBe(t.ctx.now);
    expect(decide(review('agent-create').request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'trusted' });
  });

  // argocd-agent replaces the annotations on every update, so its stamp is always dropped: a
  // new one each time turned every update that changed nothing into a new version (a watch
  // event, a store write). The old stamp is put back when nothing a new one would vouch for
  // or teach the watcher changed: the write stays a no-op for the apiserver.
  it('puts the old stamp back on an update that drops it and changes neither the view nor the labels and annotations', () => {
    const { t, request } = aliceUpdate();
    request.userInfo = { username: AGENT, groups: [] };
    request.object!.spec = structuredClone(request.oldObject!.spec);
    const oldStamp = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
    delete request.object!.metadata!.annotations![STAMP_ANNOTATION];
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toEqual({ kind: 'allow', reason: 'trusted', patch: [{ op: 'add', path: STAMP_POINTER, value: oldStamp }] });
    const stored = applyDecision(request.object!, decision);
    expect(stored.metadata!.annotations).toEqual(request.oldObject!.metadata!.annotations);
    expect(stored.spec).toEqual(request.oldObject!.spec);
  });

  it('stamps anew an update that drops the stamp and sets a label, sets or removes an annotation, or changes the view', () => {
    const variants: Array<(o: KubeObject) => void> = [
      (o) => (o.metadata!.labels = { ...o.metadata!.labels, team: 'b' }),
      (o) => (o.metadata!.annotations!['argocd.argoproj.io/refresh'] = 'hard'),
      (o) => delete o.metadata!.annotations!['kubectl.kubernetes.io/last-applied-configuration'],
      (o) => setTargetRevision(o, 'v9'),
    ];
    for (const change of variants) {
      const { t, request } = aliceUpdate();
      request.userInfo = { username: AGENT, groups: [] };
      request.object!.spec = structuredClone(request.oldObject!.spec);
      const oldStamp = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
      delete request.object!.metadata!.annotations![STAMP_ANNOTATION];
      change(request.object!);
      const stored = applyDecision(request.object!, decide(request, 'mutate', t.ctx));
      const stamped = stored.metadata!.annotations![STAMP_ANNOTATION]!;
      expect(stamped).not.toBe(oldStamp);
      expect(t.stamper.read(stamped, keyOf(request))).toMatchObject({ hash: t.policy.rules[0]!.view.of(stored).hash, seq: t.ctx.now });
    }
  });

  it('does not put back a stamp that is not fresh: an older trusted write replayed is stamped anew', () => {
    const { t, request } = aliceUpdate();
    request.userInfo = { username: AGENT, groups: [] };
    request.object!.spec = structuredClone(request.oldObject!.spec);
    const oldStamp = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
    delete request.object!.metadata!.annotations![STAMP_ANNOTATION];
    // A later trusted write is known (the cache holds a higher sequence): the old stamp is stale.
    const claim = t.stamper.read(oldStamp, keyOf(request))!;
    const learned = observe(request.oldObject!, t.policy.rules[0]!, keyOf(request), undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error('expected learn');
    t.cache.set(keyOf(request), { ...learned.entry, seq: claim.seq + 1000, resourceVersion: 'later' });
    const stamped = applyDecision(request.object!, decide(request, 'mutate', t.ctx)).metadata!.annotations![STAMP_ANNOTATION]!;
    expect(stamped).not.toBe(oldStamp);
    expect(t.stamper.read(stamped, keyOf(request))!.seq).toBeGreaterThan(claim.seq + 1000);
  });

  it('trusts by group and spec-guard itself, and allows their spec changes', () => {
    for (const userInfo of [{ username: 'bob', groups: ['argocd-agents'] }, { username: SELF, groups: [] }]) {
      const { t, request } = aliceUpdate();
      request.userInfo = userInfo;
      const decision = decide(request, 'mutate', t.ctx);
      expect(decision).toMatchObject({ kind: 'allow', reason: 'trusted' });
      // The new spec gets a new stamp.
      const stored = applyDecision(request.object!, decision);
      expect(t.stamper.verify(stored.metadata!.annotations![STAMP_ANNOTATION], keyOf(request))).toBe(
        t.policy.rules[0]!.view.of(stored).hash,
      );
    }
  });

  it('allows a trusted DELETE and asks for a tombstone on /validate only', () => {
    const t = context();
    const { request } = review('alice-delete');
    request.userInfo = { username: AGENT, groups: [] };
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'trusted', tombstone: true });
    expect(decide(request, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'trusted', tombstone: false });
  });
});

describe('untrusted UPDATE by mode', () => {
  it('enforce: both webhooks deny with 403, naming kind, object, pointer and the source of truth', () => {
    const { t, request } = aliceUpdate();
    for (const webhook of ['mutate', 'validate'] as const) {
      const decision = decide(request, webhook, t.ctx);
      expect(decision.kind).toBe('deny');
      const response = reviewResponse(request.uid, decision).response!;
      expect(response).toMatchObject({ uid: request.uid, allowed: false, status: { code: 403, reason: 'Forbidden' } });
      expect(response.status!.message).toContain('Application argocd/guestbook');
      expect(response.status!.message).toContain('/spec/source/targetRevision');
      expect(response.status!.message).toContain('source-of-truth cluster');
      expect(response.patch).toBeUndefined();
    }
  });

  it('rewrite: /mutate restores the spec with a warning; /validate denies what still differs', () => {
    const { t, request } = aliceUpdate('mode: rewrite');
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'rewritten' });
    expect(decision.kind === 'allow' && decision.warnings?.[0]).toContain('/spec/source/targetRevision');
    const stored = applyDecision(request.object!, decision);
    expect(spec(stored)).toEqual(spec(request.oldObject));
    expect(decide({ ...request, object: stored }, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
    expect(decide(request, 'validate', t.ctx).kind).toBe('deny');
  });

  // Every parsed object inherits `constructor`, `toString`, …: a walk that asked `key in old`
  // took a helm value of that name, added by alice, for one the stored object already had.
  it.each(['constructor', 'toString'])('refuses a helm value named %s added to the spec, and rewrite takes it out again', (name) => {
    for (const mode of ['enforce', 'rewrite'] as const) {
      const { t, request } = aliceUpdate(`mode: ${mode}`);
      request.object!.spec = structuredClone(request.oldObject!.spec);
      const source = spec(request.object).source as Record<string, unknown>;
      source.helm = JSON.parse(`{"valuesObject":{"image":"v1"}}`);
      (spec(request.oldObject).source as Record<string, unknown>).helm = JSON.parse(`{"valuesObject":{"image":"v1"}}`);
      stamp(t, request, request.oldObject!);
      request.object!.metadata!.annotations![STAMP_ANNOTATION] = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
      (source.helm as { valuesObject: Record<string, unknown> }).valuesObject[name] = 'evil';
      const decision = decide(request, mode === 'enforce' ? 'validate' : 'mutate', t.ctx);
      if (mode === 'enforce') {
        expect(decision.kind).toBe('deny');
        expect(decision.kind === 'deny' && decision.changed).toEqual([`/spec/source/helm/valuesObject/${name}`]);
      } else {
        expect(decision).toMatchObject({ kind: 'allow', reason: 'rewritten' });
        expect(spec(applyDecision(request.object!, decision))).toEqual(spec(request.oldObject));
      }
    }
  });

  it('warn: both webhooks allow with a warning and no patch', () => {
    const { t, request } = aliceUpdate('mode: warn');
    for (const webhook of ['mutate', 'validate'] as const) {
      const response = reviewResponse(request.uid, decide(request, webhook, t.ctx)).response!;
      expect(response.allowed).toBe(true);
      expect(response.patch).toBeUndefined();
      expect(response.warnings?.[0]).toMatch(/spec-guard: .*\/spec\/source\/targetRevision/);
    }
  });

  it('off: allows silently', () => {
    const { t, request } = aliceUpdate('mode: off');
    expect(reviewResponse(request.uid, decide(request, 'mutate', t.ctx)).response).toEqual({ uid: request.uid, allowed: true });
  });

  it('dryRun requests get the same answer', () => {
    const t = context();
    const { request } = review('alice-update-spec-dryrun');
    expect(request.dryRun).toBe(true);
    stamp(t, request, request.oldObject!);
    request.object!.metadata!.annotations![STAMP_ANNOTATION] = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
    const dry = decide(request, 'validate', t.ctx);
    const wet = decide({ ...request, dryRun: false }, 'validate', t.ctx);
    expect(dry).toEqual(wet);
    expect(dry.kind).toBe('deny');
  });
});

describe('what stays writable', () => {
  it('admits the application-controller status write', () => {
    const t = context();
    const { request } = review('controller-update-status');
    expect(request.object!.status).toBeDefined();
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  it('admits label and other annotation changes (the side doors are refused: test/unit/side-doors.test.ts)', () => {
    const { t, request } = aliceUpdate();
    request.object!.spec = structuredClone(request.oldObject!.spec);
    const meta = request.object!.metadata!;
    meta.labels = { team: 'payments' };
    meta.annotations!.note = 'hello';
    expect(decide(request, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });
});

describe('the stamp is guarded', () => {
  it.each([
    ['removed', (o: KubeObject) => delete o.metadata!.annotations![STAMP_ANNOTATION]],
    ['changed', (o: KubeObject) => (o.metadata!.annotations![STAMP_ANNOTATION] = 'v1.' + 'a'.repeat(64) + '.forged')],
  ])('denies a stamp %s by an untrusted writer', (_what, tamper) => {
    const { t, request } = aliceUpdate();
    request.object!.spec = structuredClone(request.oldObject!.spec);
    tamper(request.object!);
    const decision = decide(request, 'validate', t.ctx);
    expect(decision).toMatchObject({ kind: 'deny', changed: [STAMP_POINTER] });
  });

  it('denies adding a stamp to an unstamped object', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    request.object!.spec = structuredClone(request.oldObject!.spec);
    request.object!.metadata!.annotations![STAMP_ANNOTATION] = 'v1.' + 'b'.repeat(64) + '.x';
    expect(decide(request, 'validate', t.ctx)).toMatchObject({ kind: 'deny', changed: [STAMP_POINTER] });
  });

  it('rewrite puts a removed stamp back', () => {
    const { t, request } = aliceUpdate('mode: rewrite');
    const original = request.oldObject!.metadata!.annotations![STAMP_ANNOTATION];
    delete request.object!.metadata!.annotations![STAMP_ANNOTATION];
    const stored = applyDecision(request.object!, decide(request, 'mutate', t.ctx));
    expect(stored.metadata!.annotations![STAMP_ANNOTATION]).toBe(original);
    expect(spec(stored)).toEqual(spec(request.oldObject));
  });
});

describe('CREATE and DELETE by untrusted writers', () => {
  it('denies CREATE unless creates: allow', () => {
    const { request } = review('agent-create');
    request.userInfo = { username: 'alice', groups: ['developers'] };
    const denied = decide(request, 'validate', context().ctx);
    expect(denied.kind === 'deny' && denied.message).toContain('creating Application argocd/guestbook is reserved');
    expect(decide(request, 'validate', context('creates: allow').ctx)).toEqual({ kind: 'allow', reason: 'rule-allows' });
  });

  it('denies DELETE unless deletes: allow', () => {
    const { request } = review('alice-delete');
    const denied = decide(request, 'validate', context().ctx);
    expect(denied.kind === 'deny' && denied.message).toContain('deleting Application argocd/guestbook is reserved');
    expect(decide(request, 'validate', context('deletes: allow').ctx)).toEqual({ kind: 'allow', reason: 'rule-allows' });
  });
});

describe('what is not guarded', () => {
  it('allows other resources, other namespaces and subresources untouched', () => {
    const t = context('namespaces: [argocd]');
    const other = review('alice-update-spec').request;
    other.resource = { ...other.resource, resource: 'applicationsets' };
    expect(decide(other, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
    const elsewhere = review('alice-update-spec').request;
    elsewhere.namespace = 'team-a';
    expect(decide(elsewhere, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
    const sub = review('alice-update-spec').request;
    sub.subResource = 'status';
    expect(decide(sub, 'mutate', t.ctx)).toEqual({ kind: 'allow', reason: 'subresource' });
  });

  it('keeps guarding when the writer changes labels to leave the selector', () => {
    const t = context('labelSelector:\n  matchLabels: {guarded: "yes"}');
    const { request } = review('alice-update-spec');
    request.oldObject!.metadata!.labels = { guarded: 'yes' };
    request.object!.metadata!.labels = { guarded: 'no' };
    expect(decide(request, 'validate', t.ctx).kind).toBe('deny');
    const unlabelled = review('alice-update-spec').request;
    expect(decide(unlabelled, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unguarded' });
  });
});

describe('canonical value', () => {
  it('compares with the stored object when nothing vouches for it, and says so', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const decision = decide(request, 'validate', t.ctx);
    expect(decision.kind === 'deny' && decision.message).toContain('no canonical value is known');
  });

  it('prefers the cache over an unstamped, drifted oldObject: undoing the drift is allowed', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const rule = t.policy.rules[0]!;
    // Canonical: targetRevision v2 (what alice now writes); stored oldObject drifted to HEAD.
    t.cache.set(keyOf(request), {
      viewHash: rule.view.of(request.object).hash,
      valuesJson: JSON.stringify(rule.view.valuesOf(request.object)),
      stamp: '',
      resourceVersion: 'older',
      uid: request.object!.metadata!.uid as string,
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
    });
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  // The cache is current for the stored object in nearly every review: that version's view
  // hashed to the entry's, so the review's own copy is compared. Inflating and parsing the
  // packed values cost more than the rest of the decision (80 µs of 120 for 25 KB).
  it('with the cache current for the stored object, decides from the review without reading the packed values', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const rule = t.policy.rules[0]!;
    const old = request.oldObject!;
    let reads = 0;
    const valuesJson = JSON.stringify(rule.view.valuesOf(old));
    t.cache.set(keyOf(request), {
      viewHash: rule.view.of(old).hash,
      valuesJson: { get json() { reads++; return valuesJson; }, toJSON: () => valuesJson } as never,
      stamp: '',
      resourceVersion: old.metadata!.resourceVersion!,
      uid: old.metadata!.uid as string,
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
    });
    const decision = decide(request, 'validate', t.ctx);
    expect(decision).toMatchObject({ kind: 'deny', changed: ['/spec/source/targetRevision'] });
    expect(decision.kind === 'deny' && decision.message).not.toContain('no canonical value is known');
    expect(reads).toBe(0);
  });

  it('prefers a validly stamped oldObject over a stale cache entry', () => {
    const { t, request } = aliceUpdate();
    const rule = t.policy.rules[0]!;
    const stale = structuredClone(request.oldObject!);
    setTargetRevision(stale, 'ancient');
    t.cache.set(keyOf(request), {
      viewHash: rule.view.of(stale).hash,
      valuesJson: JSON.stringify(rule.view.valuesOf(stale)),
      stamp: '',
      resourceVersion: 'stale',
      uid: 'u',
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
    });
    // Writing back the stamped (current, trusted) spec is no change.
    request.object!.spec = structuredClone(request.oldObject!.spec);
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  it('ignores a stamp copied from another object', () => {
    const { t, request } = aliceUpdate();
    const copied = { ...request, name: 'other', oldObject: { ...request.oldObject!, metadata: { ...request.oldObject!.metadata, name: 'other' } } };
    copied.object = { ...request.object!, spec: structuredClone(request.oldObject!.spec) };
    const decision = decide(copied, 'validate', t.ctx);
    // Same spec: allowed, but only because it equals the stored object, which nothing vouches for.
    expect(decision).toEqual({ kind: 'allow', reason: 'unchanged' });
    setTargetRevision(copied.object, 'v9');
    const denied = decide(copied, 'validate', t.ctx);
    expect(denied.kind === 'deny' && denied.message).toContain('no canonical value is known');
  });
});

describe('argocd-application normalizer', () => {
  /** The application-controller's normalizing write: project "" → default, zero blocks dropped. */
  function normalizingWrite(extra?: (s: Record<string, unknown>) => void) {
    const t = context();
    const { request } = review('controller-update-status');
    const oldSpec = spec(request.oldObject);
    oldSpec.project = '';
    oldSpec.syncPolicy = {};
    (oldSpec.source as Record<string, unknown>).helm = { valueFiles: [], passCredentials: false };
    (oldSpec.source as Record<string, unknown>).directory = { recurse: false, jsonnet: {} };
    stamp(t, request, request.oldObject!);
    request.object!.metadata!.annotations = { ...request.oldObject!.metadata!.annotations };
    const newSpec = structuredClone(oldSpec);
    newSpec.project = 'default';
    delete newSpec.syncPolicy;
    delete (newSpec.source as Record<string, unknown>).helm;
    delete (newSpec.source as Record<string, unknown>).directory;
    extra?.(newSpec);
    request.object!.spec = newSpec;
    return { t, request };
  }

  it('admits the controller normalizing write', () => {
    const { t, request } = normalizingWrite();
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  it('still refuses a real change hidden in a normalizing write, naming only it', () => {
    const { t, request } = normalizingWrite((s) => ((s.destination as Record<string, unknown>).namespace = 'prod'));
    expect(decide(request, 'validate', t.ctx)).toMatchObject({ kind: 'deny', changed: ['/spec/destination/namespace'] });
  });

  it('without the normalizer the same write is a change', () => {
    const { request } = normalizingWrite();
    const t = context('mode: enforce');
    stamp(t, request, request.oldObject!);
    request.object!.metadata!.annotations = { ...request.oldObject!.metadata!.annotations };
    expect(decide(request, 'validate', t.ctx).kind).toBe('deny');
  });
});

describe('ignore pointers', () => {
  const rule = 'mode: rewrite\nignore: [/spec/source/targetRevision]';

  it('allow a change below an ignored pointer', () => {
    const { t, request } = aliceUpdate(rule);
    expect(decide(request, 'validate', t.ctx)).toEqual({ kind: 'allow', reason: 'unchanged' });
  });

  it('keep the new ignored value when rewrite restores the rest', () => {
    const { t, request } = aliceUpdate(rule);
    spec(request.object).project = 'evil';
    const decision = decide(request, 'mutate', t.ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'rewritten' });
    const stored = applyDecision(request.object!, decision);
    expect(spec(stored).project).toBe('default');
    expect((spec(stored).source as Record<string, unknown>).targetRevision).toBe('v2');
  });
});

describe('a trusted create by generateName', () => {
  it('gets its name chosen on /mutate and a stamp valid for that name, the same on reinvocation', () => {
    const t = context();
    const { request } = review('agent-create');
    delete request.object!.metadata!.name;
    request.object!.metadata!.generateName = 'guestbook-';
    request.name = '';
    const decision = decide(request, 'mutate', t.ctx);
    const stored = applyDecision(request.object!, decision);
    const name = stored.metadata!.name!;
    expect(name).toMatch(/^guestbook-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const rule = t.policy.rules[0]!;
    const key = keyOf({ ...request, name });
    expect(t.stamper.verify(stored.metadata!.annotations![STAMP_ANNOTATION], key)).toBe(rule.view.of(stored).hash);
    expect(applyDecision(request.object!, decide(request, 'mutate', t.ctx)).metadata!.name).toBe(name);
  });
});

describe('a trusted write does not launder drift', () => {
  it('a partial agent write over an unreverted untrusted change keeps the canonical value where the write did not touch it', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const rule = t.policy.rules[0]!;
    const key = keyOf(request);
    // The canonical version: stamped, learned by the watcher.
    const canonical = structuredClone(request.oldObject!);
    stamp(t, request, canonical);
    const learned = observe(canonical, rule, key, undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error('expected learn');
    t.cache.set(key, learned.entry);
    // Behind admission, alice's change landed (and keeps the old stamp); the revert is late.
    const drifted = structuredClone(canonical);
    setTargetRevision(drifted, 'evil');
    drifted.metadata!.resourceVersion = `${canonical.metadata!.resourceVersion}1`;
    // The agent's merge patch of one other field.
    const written = structuredClone(drifted);
    (spec(written).source as Record<string, unknown>).path = 'new-path';
    const agentWrite = { ...request, userInfo: { username: AGENT }, oldObject: drifted, object: written };
    const decision = decide(agentWrite, 'mutate', t.ctx);
    const stored = applyDecision(written, decision);
    expect((spec(stored).source as Record<string, unknown>).targetRevision).toBe((spec(canonical).source as Record<string, unknown>).targetRevision);
    expect((spec(stored).source as Record<string, unknown>).path).toBe('new-path');
    expect(t.stamper.verify(stored.metadata!.annotations![STAMP_ANNOTATION], key)).toBe(rule.view.of(stored).hash);
    // A write that sets that field itself is the source of truth speaking: kept.
    const full = structuredClone(drifted);
    setTargetRevision(full, 'v3');
    const kept = applyDecision(full, decide({ ...agentWrite, object: full }, 'mutate', t.ctx));
    expect((spec(kept).source as Record<string, unknown>).targetRevision).toBe('v3');
  });

  it('the agent’s own unstamped write, stored while the guard layer held (on a replica that does not lead), is not put back by its next partial write', () => {
    const t = context();
    const { request } = review('alice-update-spec');
    const rule = t.policy.rules[0]!;
    const key = keyOf(request);
    const canonical = structuredClone(request.oldObject!);
    canonical.metadata!.resourceVersion = '100';
    stamp(t, request, canonical);
    const learned = observe(canonical, rule, key, undefined, undefined, t.stamper);
    if (learned.kind !== 'learn') throw new Error('expected learn');
    t.cache.set(key, learned.entry);
    // While every replica was down, the agent wrote v2: admitted by the policy, not stamped.
    const unstamped = structuredClone(canonical);
    setTargetRevision(unstamped, 'v2');
    unstamped.metadata!.resourceVersion = '120';
    const written = structuredClone(unstamped);
    (spec(written).source as Record<string, unknown>).path = 'new-path';
    const agentWrite = { ...request, userInfo: { username: AGENT }, oldObject: unstamped, object: written };
    // The guard layer held since before the canonical value was known (revision 50).
    const intact = { intact: true, since: '50', sinceTime: 0 };
    const layers = { guard: intact, stamp: { intact: false }, tombstone: intact };
    const stored = applyDecision(written, decide(agentWrite, 'mutate', { ...t.ctx, layers }));
    expect((spec(stored).source as Record<string, unknown>).targetRevision).toBe('v2');
    // Without that evidence (a blind window), the canonical value is kept as before.
    const blind = applyDecision(written, decide(agentWrite, 'mutate', { ...t.ctx, layers: { ...layers, guard: { intact: false } } }));
    expect((spec(blind).source as Record<string, unknown>).targetRevision).toBe((spec(canonical).source as Record<string, unknown>).targetRevision);
  });
});

describe('break glass', () => {
  it('a member of a break-glass group writes as the source of truth, stamped, and is told so; others in the same user stay refused', () => {
    const t = context();
    const policy = new Policy(parseConfig(configYaml('mode: enforce\nnormalizer: argocd-application').replace('  groups: [argocd-agents]', '  groups: [argocd-agents]\n  breakGlassGroups: [spec-guard:break-glass]'), 'bg.yaml'), SELF);
    const ctx = { ...t.ctx, policy };
    const { request } = review('alice-update-spec');
    request.userInfo = { username: 'alice', groups: ['developers', 'spec-guard:break-glass'] };
    const decision = decide(request, 'mutate', ctx);
    expect(decision).toMatchObject({ kind: 'allow', reason: 'break-glass' });
    if (decision.kind === 'allow') {
      expect(decision.warnings?.join()).toMatch(/break-glass UPDATE of Application argocd\/guestbook by alice/);
      const stored = applyDecision(request.object!, decision);
      expect(t.stamper.verify(stored.metadata!.annotations![STAMP_ANNOTATION], keyOf(request))).toBe(policy.rules[0]!.view.of(stored).hash);
    }
    request.userInfo = { username: 'alice', groups: ['developers'] };
    expect(decide(request, 'validate', ctx).kind).toBe('deny');
    // A trusted identity is never reported as break glass.
    expect(policy.isBreakGlass({ username: AGENT, groups: ['spec-guard:break-glass'] })).toBe(false);
  });
});
