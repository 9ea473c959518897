import { createHash } from 'node:crypto';
import { entryValues, type CanonicalEntry, type CanonicalLookup } from './canonical-entry.js';
import { objectKey, reviewedName } from './object-key.js';
import { STAMP_ANNOTATION, STAMP_POINTER, nextSeq, type Stamper } from './stamp.js';
import { TooDeepError } from './canonical-json.js';
import { getAt, hasParent, parsePointer, removeAt, setAt } from './pointer.js';
import { cloneJson } from '../kube/json.js';
import { isFresh } from './freshness.js';
import type { Layers } from './attribution.js';
import { attributeStored } from './observe.js';
import { type GuardedValues, type PatchOp } from './guarded-view.js';
import { type Policy, type Rule } from './policy.js';
import type { AdmissionRequest, KubeObject } from '../kube/types.js';
import type { Decision, Webhook } from './decision.js';
import { stampPatch } from './stamp-patch.js';
import { selectable, selectionRestoreOps, type NamespaceLabels } from './selection.js';
import { consumerDoorDenial, createDenial, deleteDenial, namespaceDenial, ownedDenial } from './messages.js';
import { within } from './ownership.js';

export interface DecisionContext {
  policy: Policy;
  canonical: CanonicalLookup;
  stamper: Stamper;
  /** The time of the request (ms): the sequence of a new stamp starts there. */
  now: number;
  /** Namespace labels, for rules that select namespaces by them (unknown: selected). */
  namespaceLabels?: NamespaceLabels;
  /** The admission layers as this replica last verified them (unknown: none vouches). */
  layers?: Layers;
}

interface Canonical {
  values: GuardedValues;
  /** False when nothing vouches for it: the stored object as it is. */
  known: boolean;
}

/** How many changed pointers a message lists before it says "and N more". */
const MAX_POINTERS_SHOWN = 8;

const stampOf = (object: KubeObject | null | undefined): string | undefined =>
  object?.metadata?.annotations?.[STAMP_ANNOTATION];

function describe(req: AdmissionRequest, object: KubeObject | null | undefined): string {
  const name = reviewedName({ ...req, object }) || '(unnamed)';
  return `${req.kind.kind} ${req.namespace ? `${req.namespace}/` : ''}${name}`;
}

function listPointers(pointers: string[]): string {
  const shown = pointers.slice(0, MAX_POINTERS_SHOWN).join(', ');
  return pointers.length > MAX_POINTERS_SHOWN ? `${shown} and ${pointers.length - MAX_POINTERS_SHOWN} more` : shown;
}

/** How a write that moves an object into or out of a selection is named in messages. */
const SELECTION_POINTER = '/metadata (its selection: name, labels or annotations)';

/**
 * Is the cache entry current for the stored version `old`? An entry is current for a version
 * only when that version's view hashed to the entry's (learned from it, or seen in sync): the
 * stored object's guarded values then compare exactly as the entry's.
 */
const currentFor = (entry: CanonicalEntry | undefined, old: KubeObject): boolean => entry !== undefined && entry.resourceVersion === old.metadata?.resourceVersion;

/**
 * The canonical value for an UPDATE: the stored object when the cache is current for it (read
 * from the review, not inflated and parsed from the cache: for 25 KB, more CPU than the rest of
 * the decision), else a validly stamped oldObject (trusted and current), else the cache, else
 * the stored object as it is (nothing vouches for it).
 */
function resolveCanonical(rule: Rule, key: string, old: KubeObject, ctx: DecisionContext): Canonical {
  const entry = ctx.canonical.get(key);
  if (currentFor(entry, old) || freshlyStamped(rule, key, old, ctx)) return { values: rule.view.valuesOf(old), known: true };
  if (entry) return { values: entryValues(entry), known: true };
  return { values: rule.view.valuesOf(old), known: false };
}

/** Does `object` carry a valid stamp for its view that is the newest trusted write known? */
function freshlyStamped(rule: Rule, key: string, object: KubeObject, ctx: DecisionContext): boolean {
  const claim = ctx.stamper.read(stampOf(object), key);
  return claim !== undefined && claim.hash === rule.view.of(object).hash && isFresh(claim, object, ctx.canonical.get(key), ctx.canonical.tombstone(key));
}

function decideTrusted(req: AdmissionRequest, webhook: Webhook, rule: Rule, key: string, ctx: DecisionContext): Decision {
  if (req.operation === 'DELETE') return { kind: 'allow', reason: 'trusted', tombstone: webhook === 'validate' };
  const object = req.object;
  if (webhook !== 'mutate' || !object || (req.operation !== 'CREATE' && req.operation !== 'UPDATE')) {
    return { kind: 'allow', reason: 'trusted' };
  }
  // A create by generateName has no name yet, and a stamp binds the name: pick it here.
  const generated = req.operation === 'CREATE' && !object.metadata?.name && object.metadata?.generateName ? generatedName(object.metadata.generateName, req.uid) : undefined;
  const stampKey = generated ? objectKey(req.resource.group, req.resource.resource, req.namespace, generated) : key;
  const kept = req.operation === 'UPDATE' && req.oldObject ? keepCanonical(rule, key, req.oldObject, object, ctx) : undefined;
  const stored = kept?.object ?? object;
  const hash = rule.view.of(stored).hash;
  const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
  const oldClaim = old ? ctx.stamper.read(stampOf(old), key) : undefined;
  const entry = ctx.canonical.get(stampKey);
  const tombstone = ctx.canonical.tombstone(stampKey);
  // A write that leaves the view as the old object's fresh stamp vouches for it keeps that
  // stamp: carried (a status or metadata write), or put back where the writer dropped it and
  // changed nothing the watcher learns from a new stamp (labels, annotations). argocd-agent
  // replaces the annotations on every update: its writes that change nothing stay no-ops for
  // the apiserver (no new version, no watch event, no store write) instead of a new stamp each.
  if (!kept && old && oldClaim && oldClaim.hash === hash && isFresh(oldClaim, old, entry, tombstone)) {
    if (stampOf(object) === stampOf(old)) return { kind: 'allow', reason: 'trusted' };
    if (sameLearnedMetadata(old, object)) return { kind: 'allow', reason: 'trusted', patch: stampPatch(object, stampOf(old)) };
  }
  // Newer than every stamp and delete seen: a later replay of an older stamp is then stale.
  const seq = nextSeq(ctx.now, oldClaim?.seq, entry?.seq, tombstone ? Date.parse(tombstone.at) : undefined);
  const stamp = ctx.stamper.stamp(hash, stampKey, seq);
  const nameOps: PatchOp[] = generated ? [{ op: 'add', path: '/metadata/name', value: generated }] : [];
  return { kind: 'allow', reason: 'trusted', patch: [...nameOps, ...(kept?.ops ?? []), ...stampPatch(object, stamp)] };
}

/** Equal string maps, an absent one as empty, `except` left out; no copy of their keys (the trusted write's path). */
function sameMap(a: Record<string, string> | null | undefined, b: Record<string, string> | null | undefined, except?: string): boolean {
  let unmatched = 0;
  for (const k in a ?? {}) {
    if (k === except) continue;
    if (!b || !Object.hasOwn(b, k) || a![k] !== b[k]) return false;
    unmatched++;
  }
  for (const k in b ?? {}) if (k !== except) unmatched--;
  return unmatched === 0;
}

/** The labels and annotations (the stamp aside) a new stamp would have the watcher learn: the same in both. */
const sameLearnedMetadata = (old: KubeObject, object: KubeObject): boolean =>
  sameMap(old.metadata?.labels, object.metadata?.labels) && sameMap(old.metadata?.annotations, object.metadata?.annotations, STAMP_ANNOTATION);

const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/**
 * A trusted write does not launder drift. Where the stored object differs from the known
 * canonical value (an untrusted change not reverted yet) and this write leaves that pointer
 * as it was, the canonical value is put back: the stamp then vouches only for what a trusted
 * writer wrote. Undefined when there is nothing to put back, which the common case (the
 * cache is current for the stored version) answers without any walk.
 */
function keepCanonical(rule: Rule, key: string, old: KubeObject, object: KubeObject, ctx: DecisionContext): { ops: PatchOp[]; object: KubeObject } | undefined {
  const entry = ctx.canonical.get(key);
  if (!entry || currentFor(entry, old)) return undefined;
  const oldHash = rule.view.of(old).hash;
  if (oldHash === entry.viewHash) return undefined;
  // A fresh stamp: a trusted write the cache has not seen yet, canonical itself.
  if (freshlyStamped(rule, key, old, ctx)) return undefined;
  // The guard layer vouches for the stored change (continuity): a trusted writer made it
  // unstamped (the stamp webhook fails open), on this replica as on the leader.
  if (ctx.layers && attributeStored(rule, entry, old, ctx.layers) === 'trusted') return undefined;
  const values = entryValues(entry);
  const drifted = rule.view.changedPointers(values, old);
  const written = rule.view.changedPointers(rule.view.valuesOf(old), object);
  const untouched = drifted.filter((p) => !written.some((w) => overlaps(w, p)));
  if (untouched.length === 0) return undefined;
  const target = cloneJson(object);
  const ops: PatchOp[] = [];
  for (const pointer of untouched) {
    const tokens = parsePointer(pointer);
    if (!hasParent(target, tokens)) continue;
    const base = rule.view.pointers.find((g) => pointer === g || pointer.startsWith(`${g}/`))!;
    const wanted = getAt(values[base], tokens.slice(parsePointer(base).length));
    const present = getAt(target, tokens) !== undefined;
    if (wanted !== undefined) {
      ops.push({ op: present ? 'replace' : 'add', path: pointer, value: wanted });
      setAt(target as Record<string, unknown>, tokens, cloneJson(wanted));
    } else if (present) {
      ops.push({ op: 'remove', path: pointer });
      removeAt(target, tokens);
    }
  }
  return ops.length ? { ops, object: target } : undefined;
}

/** The apiserver's alphabet for generated names (no vowels, no look-alikes). */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * The name the apiserver would generate (prefix + 5 characters), derived from the request
 * uid rather than drawn at random: the decision stays pure and a reinvocation picks the same.
 */
function generatedName(prefix: string, uid: string): string {
  const digest = createHash('sha256').update(uid).digest();
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[digest[i]! % NAME_ALPHABET.length];
  return `${prefix.slice(0, 253 - 5)}${suffix}`;
}

/** A break-glass write is decided as the source of truth's, and says so. */
function breakGlass(req: AdmissionRequest, decision: Decision): Decision {
  if (decision.kind !== 'allow') return decision;
  const warning = `spec-guard: break-glass ${req.operation} of ${describe(req, req.object ?? req.oldObject)} by ${req.userInfo.username ?? 'unknown'}: admitted as the source of truth's and never reverted; the source of truth overwrites it at its next sync.`;
  return { ...decision, reason: 'break-glass', warnings: [...(decision.warnings ?? []), warning] };
}

/** Does this write move the object into or out of a rule's selection (its labels or annotations)? */
function selectionChanged(req: AdmissionRequest, ctx: DecisionContext): boolean {
  const { group, resource } = req.resource;
  const before = ctx.policy.match(group, resource, req.namespace, [selectable(req.oldObject)], ctx.namespaceLabels);
  const after = ctx.policy.match(group, resource, req.namespace, [selectable(req.object)], ctx.namespaceLabels);
  return before !== after;
}

/** The doors (owned pointers) that hold a changed pointer: what a message says is owned. */
function ownedDoors(rule: Rule, changed: string[]): string {
  const doors = rule.ownership.doors.filter((d) => d.canonical && changed.some((p) => within(p, d.pointer))).map((d) => d.pointer);
  return (doors.length ? doors : rule.view.pointers).join(', ');
}

/**
 * What an untrusted write changes of what it may not: the guarded pointers that differ from
 * the canonical value (for the consumer, those outside its own doors), the consumer's own doors
 * (for anyone else), the stamp and the selection.
 */
function changedByWrite(req: AdmissionRequest, rule: Rule, canonical: Canonical, ctx: DecisionContext): { changed: string[]; consumerDoors: string[] } {
  const object = req.object!;
  const old = req.oldObject!;
  const { ownership } = rule;
  // The walk is the comparison. Hashing the view first ("unchanged" without a walk) cost more
  // than the walk (serializing and hashing 25 KB), and the CEL match conditions send the
  // webhook only writes that change a guarded path: nearly every one would walk anyway.
  const guarded = rule.view.changedPointers(canonical.values, object);
  const consumer = ownership.isConsumer(req.userInfo);
  const changed = consumer ? guarded.filter((p) => !ownership.consumerMay(p)) : guarded;
  const consumerDoors = consumer ? [] : ownership.changedConsumerDoors(old, object);
  if (stampOf(object) !== stampOf(old)) changed.push(STAMP_POINTER);
  if (selectionChanged(req, ctx)) changed.push(SELECTION_POINTER);
  return { changed, consumerDoors };
}

function decideUpdate(req: AdmissionRequest, webhook: Webhook, rule: Rule, key: string, ctx: DecisionContext): Decision {
  const object = req.object!;
  const old = req.oldObject!;
  const canonical = resolveCanonical(rule, key, old, ctx);
  const { changed, consumerDoors } = changedByWrite(req, rule, canonical, ctx);
  if (changed.length === 0 && consumerDoors.length === 0) return { kind: 'allow', reason: 'unchanged' };
  const what = describe(req, object);
  const unknownNote = canonical.known ? '' : ' (no canonical value is known yet; compared with the stored object)';
  const all = [...changed, ...consumerDoors];
  const sourceOfTruth = `${ownedDoors(rule, all)} of ${what} is owned by the source of truth`;

  if (rule.mode === 'warn') {
    return {
      kind: 'allow',
      reason: 'warned',
      warnings: [`spec-guard: ${sourceOfTruth}; changed ${listPointers(all)} will not stick${unknownNote}`],
    };
  }
  // rewrite patches on /mutate; /validate then denies whatever still differs.
  if (rule.mode === 'rewrite' && webhook === 'mutate') {
    return {
      kind: 'allow',
      reason: 'rewritten',
      patch: [
        ...rule.view.restoreOps(canonical.values, object),
        ...consumerDoorRestoreOps(rule, consumerDoors, old, object),
        ...(changed.includes(STAMP_POINTER) ? stampPatch(object, stampOf(old)) : []),
        ...(changed.includes(SELECTION_POINTER) ? selectionRestoreOps(ctx.policy.selectionKeys(req.resource.group, req.resource.resource), old.metadata ?? {}, object.metadata ?? {}) : []),
      ],
      warnings: [`spec-guard: ${sourceOfTruth}; your change to ${listPointers(all)} was undone${unknownNote}`],
    };
  }
  const message = changed.length
    ? ownedDenial(ownedDoors(rule, changed), what, listPointers(changed), unknownNote)
    : consumerDoorDenial(consumerDoors.join(', '), what, rule.ownership.consumers.join(', '));
  return { kind: 'deny', changed: all, message };
}

/** Patch operations that put the consumer's doors back as they were in `old` (rewrite mode). */
function consumerDoorRestoreOps(rule: Rule, pointers: string[], old: KubeObject, object: KubeObject): PatchOp[] {
  return rule.ownership.doors
    .filter((d) => pointers.includes(d.pointer) && hasParent(object, d.tokens))
    .map((d): PatchOp => {
      const before = getAt(old, d.tokens);
      return before === undefined ? { op: 'remove', path: d.pointer } : { op: 'add', path: d.pointer, value: before };
    });
}

/**
 * The admission decision, pure: no I/O, no clock. `webhook` says which endpoint asks:
 * only /mutate may patch; /validate re-checks what the mutating chain produced.
 */
export function decide(req: AdmissionRequest, webhook: Webhook, ctx: DecisionContext): Decision {
  try {
    return decideGuarded(req, webhook, ctx);
  } catch (err) {
    if (!(err instanceof TooDeepError)) throw err;
    // No guarded value this deep can be compared, stamped or restored. The source of truth is
    // never refused (promise 1): admitted unstamped, and the watcher reports that it cannot be
    // guarded. Anyone else is refused: nothing can show the write leaves the doors alone.
    const what = describe(req, req.object ?? req.oldObject);
    if (ctx.policy.isTrusted(req.userInfo)) return { kind: 'allow', reason: 'trusted', warnings: [`spec-guard: ${what}: ${err.message}; admitted unstamped, spec-guard cannot guard it`] };
    return { kind: 'deny', changed: [], message: `spec-guard: ${what}: ${err.message}; spec-guard refuses it.` };
  }
}

/**
 * A namespace's labels may select it for rules (namespaceSelector): an untrusted write may
 * label a namespace into a selection (more is guarded), not out of one (its objects would be
 * unguarded at once).
 */
function decideNamespace(req: AdmissionRequest, ctx: DecisionContext): Decision {
  if (req.operation !== 'UPDATE' || ctx.policy.isTrusted(req.userInfo)) return { kind: 'allow', reason: 'unguarded' };
  const name = req.name || req.object?.metadata?.name || '';
  const leaves = ctx.policy.namespaceLeaves(name, req.oldObject?.metadata?.labels, req.object?.metadata?.labels);
  if (leaves.length === 0) return { kind: 'allow', reason: 'unguarded' };
  const what = `whose ${leaves.map((r) => r.config.resource).join(', ')} spec-guard guards (resources[${leaves.map((r) => r.index).join('], resources[')}])`;
  if (leaves.every((r) => r.mode === 'warn')) return { kind: 'allow', reason: 'warned', warnings: [`spec-guard: this write takes namespace ${name} out of the namespaces ${what}`] };
  return { kind: 'deny', changed: ['/metadata/labels'], message: namespaceDenial(name, what) };
}

function decideGuarded(req: AdmissionRequest, webhook: Webhook, ctx: DecisionContext): Decision {
  // A namespace's status and finalize subresources keep label changes: judged like the namespace.
  if (req.resource.group === '' && req.resource.resource === 'namespaces' && ctx.policy.readsNamespaceLabels) return decideNamespace(req, ctx);
  if (req.subResource) return { kind: 'allow', reason: 'subresource' };
  const object = req.object ?? undefined;
  const old = req.oldObject ?? undefined;
  const rule = ctx.policy.match(req.resource.group, req.resource.resource, req.namespace, [selectable(object), selectable(old)], ctx.namespaceLabels);
  if (!rule) return { kind: 'allow', reason: 'unguarded' };

  const key = objectKey(req.resource.group, req.resource.resource, req.namespace, reviewedName(req));
  if (ctx.policy.isBreakGlass(req.userInfo)) return breakGlass(req, decideTrusted(req, webhook, rule, key, ctx));
  if (ctx.policy.isTrusted(req.userInfo)) return decideTrusted(req, webhook, rule, key, ctx);
  if (rule.mode === 'off') return { kind: 'allow', reason: 'mode-off' };

  const what = describe(req, object ?? old);
  switch (req.operation) {
    case 'CREATE':
      if (rule.config.creates === 'allow') return { kind: 'allow', reason: 'rule-allows' };
      return { kind: 'deny', changed: [], message: createDenial(what) };
    case 'DELETE':
      if (rule.config.deletes === 'allow') return { kind: 'allow', reason: 'rule-allows' };
      return { kind: 'deny', changed: [], message: deleteDenial(what) };
    case 'UPDATE':
      if (!object || !old) return { kind: 'allow', reason: 'unguarded' };
      return decideUpdate(req, webhook, rule, key, ctx);
    default:
      return { kind: 'allow', reason: 'unguarded' };
  }
}
