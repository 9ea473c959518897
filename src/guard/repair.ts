import type { KubeObject } from '../kube/types.js';
import { attributeChange, attributeDelete, heldUntilWrite, laterRevision, type Attribution, type Layers } from './attribution.js';
import { entryValues, type CanonicalEntry, type Tombstone } from './canonical-entry.js';
import type { PatchOp } from './guarded-view.js';
import { observe, resolve } from './observe.js';
import { parsePointer, setAt } from './pointer.js';
import type { Rule } from './policy.js';
import { selectionRestoreOps, type SelectionKeys } from './selection.js';
import type { Stamper } from './stamp.js';
import { stampPatch } from './stamp-patch.js';
import { confirms } from './tombstones.js';
import { MAX_DEPTH } from './canonical-json.js';
import { forgedOperationState } from './operation-state.js';
import { parseObjectKey } from './object-key.js';

/** Everything the watcher knows about one version of one guarded object. */
export interface RepairInput {
  key: string;
  rule: Rule;
  /** The version seen; for a delete, what is known of the deleted object (its uid at least). */
  object: KubeObject;
  deleted: boolean;
  /** The key's canonical value, if one is known. */
  entry: CanonicalEntry | undefined;
  /** The key's tombstone (for a delete, the store's when the cache's does not confirm it). */
  tombstone: Tombstone | undefined;
  /** Only the leader attributes, writes and reports; every replica keeps its cache. */
  leader: boolean;
  /** The admission layers as verified; absent until a plan asks for them. */
  layers?: Layers;
  /**
   * The layers as last verified, when the guard layer was out of force then: enough to
   * attribute a change that only a revert can follow (nothing vouches for it), planned in one
   * pass instead of asking for a fresh verification and observing the version again.
   */
  layersIfGuardBroken?: Layers;
  stamper: Stamper;
  now: number;
  /** The label and annotation keys the rules of this resource select by. */
  selectionKeys: SelectionKeys;
  /** For an object from a list: the list's revision, as of which what it shows holds. */
  listedAt?: string;
  /** An admission layer came into force: store the revision a listed object is known canonical at. */
  storeListed: boolean;
  /** For a version from the watch: the version it showed of the object just before (see heldUntilWrite). */
  follows?: string;
}

/** A Kubernetes Event to record on the object. */
export interface Report {
  reason: string;
  message: string;
}

/** A change or delete that no layer vouches for: counted, logged and reported whatever is done about it. */
export interface Unattributed {
  change: 'update' | 'delete';
  changed: string[];
  action: string;
  report: Report;
  /** Reported by the revert that undoes it, as its one Event and log line, once it landed (withUnattributed). */
  byRevert?: true;
}

interface PlanBase {
  /** The drifted-objects gauge: is this key drifted and not reverted yet (undefined: unchanged)? */
  drifted?: boolean;
  /** Count a detected drift (once per version). */
  detected?: boolean;
  unattributed?: Unattributed;
}

/** What the watcher does about one version of one guarded object. Pure data: the watcher executes it. */
export type RepairPlan = PlanBase &
  (
    | /** Attribution needs the layers: verify them, then plan again. */
      { kind: 'verify-layers' }
    | { kind: 'none'; why?: string }
    /** Keep `entry` as the canonical value (learned, or in sync); `stamp`: a patch that (re)stamps the object. */
    | { kind: 'keep'; entry: CanonicalEntry; store: boolean; endFight: boolean; clearTombstone: boolean; stamp: PatchOp[]; purpose: 'stamp' | 'restamp' }
    /** No longer guarded: forget the canonical value (`tombstone`: keep it a while, stamps issued before the delete are stale); `by`: who deleted it; `report`: an Event to record. */
    | { kind: 'forget'; why: string; by?: string; tombstone?: Tombstone; report?: Report }
    /** Patch the object back to the canonical value; `report` once it landed. */
    | { kind: 'revert'; entry: CanonicalEntry; ops: PatchOp[]; changed: string[]; attribution: Attribution; report: Report }
    /** Warn mode: report the change, leave it in place. */
    | { kind: 'warn'; report: Report }
    /** Create the object again from its canonical value. */
    | { kind: 'recreate'; body: Record<string, unknown>; report: Report }
  );

/** How a move out of the selection is named in Events and logs. */
export const SELECTION = '/metadata (labels or annotations that select it)';

const ACTION_WORDS: Record<string, string> = {
  learn: 'accepted (blindWindow.changes: accept)',
  revert: 'reverted (blindWindow.changes: revert)',
  leave: 'left alone (no canonical value is known)',
  recreate: 'recreated (blindWindow.deletes: recreate)',
  'keep-deleted': 'kept deleted (blindWindow.deletes: keep-deleted)',
};

function unattributed(changed: string[], action: string): Unattributed {
  const change = changed.length ? 'update' : 'delete';
  const what = change === 'update' ? `A change to ${changed.join(', ')} without a valid, fresh stamp` : 'A delete without a tombstone';
  const message = `${what} was made while spec-guard's admission layers were not in force (a blind window): it cannot be attributed; ${ACTION_WORDS[action] ?? action}`;
  return { change, changed, action, report: { reason: 'UnattributedChange', message } };
}

/**
 * Plans the repair of one version of one guarded object, as the design's watch side says:
 * a fresh stamp is learned, a copy in sync kept, a change attributed by continuity and then
 * learned (trusted) or reverted, a delete without a tombstone recreated. Pure: the clock,
 * the layers and leadership are inputs.
 */
export function planRepair(input: RepairInput): RepairPlan {
  if (input.deleted) return planDelete(input);
  // What the watch's order adds to the entry: known canonical until this version's write.
  input = { ...input, entry: heldUntilWrite(input.entry, input.object, input.follows) };
  const meta = input.object.metadata ?? {};
  if (!meta.deletionTimestamp && !input.rule.selection.selects(meta)) return planEscape(input);
  const plan = planVersion(input);
  // The leader reports a forged operation in progress (Argo CD's doors) whatever it does else.
  const forged = input.leader && plan.kind !== 'verify-layers' && !plan.unattributed && input.rule.config.normalizer === 'argocd-application' ? forgedOperationState(input.object, input.entry) : undefined;
  return forged ? { ...plan, unattributed: forged } : plan;
}

function planVersion(input: RepairInput): RepairPlan {
  const { object, rule, key, entry, tombstone, stamper, leader } = input;
  const obs = observe(object, rule, key, entry, tombstone, stamper);
  const acts = rule.mode !== 'warn';
  switch (obs.kind) {
    case 'ignore':
    case 'unknown':
      return { kind: 'none', drifted: false };
    case 'in-sync':
      return {
        kind: 'keep',
        drifted: false,
        entry: asListed(input, obs.entry),
        store: storesListed(input),
        endFight: false,
        clearTombstone: false,
        stamp: obs.restoreStamp && leader && acts ? stampPatch(object, obs.entry.stamp) : [],
        purpose: 'stamp',
      };
    case 'learn':
      return keep(input, asListed(input, obs.entry), false);
    case 'too-deep':
      return planTooDeep(input, obs.entry, obs.changed);
    case 'changed': {
      // Only the leader attributes (it alone acts on the answer); a follower waits for the stamp.
      if (!leader) return { kind: 'none' };
      // The layers last seen with the guard out of force will do where only a revert can follow.
      const onlyRevert = rule.config.blindWindow.changes === 'revert' && obs.previous !== undefined;
      const layers = input.layers ?? (onlyRevert ? input.layersIfGuardBroken : undefined);
      if (!layers) return { kind: 'verify-layers' };
      const plan = resolve(obs, object, rule, key, layers, stamper, input.now);
      const consumed = plan.action === 'learn' && plan.consumed;
      const report = plan.attribution === 'unattributed' && !consumed ? unattributed(obs.changed, plan.action) : undefined;
      const planned: RepairPlan =
        plan.action === 'leave'
          ? { kind: 'none', why: 'no canonical value known; leaving the object alone' }
          : plan.action === 'learn'
            ? keep(input, plan.entry, true)
            : revertOrWarn(input, plan.entry, obs.changed, plan.attribution);
      return withUnattributed(planned, report);
    }
  }
}

/**
 * `plan` with the unattributed change it acts on. A revert reports the change as its own
 * Event (UnattributedChange, whose message says it was reverted) and log line once it landed:
 * one Event and one line per drift instead of two saying the same, in the blind window where
 * reverts come in bursts. A recreate keeps both: its Event names the new object.
 */
function withUnattributed(plan: RepairPlan, report: Unattributed | undefined): RepairPlan {
  if (report && plan.kind === 'revert') return { ...plan, report: report.report, unattributed: { ...report, byRevert: true } };
  return { ...plan, unattributed: report };
}

/**
 * A value nested deeper than a guard compares: no untrusted writer gets one past admission
 * (the webhook refuses it), so where the layers vouch for the change a trusted writer made it
 * (promise 1 admits it unstamped). It cannot be guarded: forgotten and reported, never
 * reverted (promise 3); anything else is reverted to the known value.
 */
function planTooDeep(input: RepairInput, entry: CanonicalEntry, changed: string[]): RepairPlan {
  const { leader, layers, rule, object } = input;
  if (!leader) return { kind: 'none', drifted: true, detected: true };
  if (!layers) return { kind: 'verify-layers' };
  const sameCopy = entry.uid === object.metadata?.uid ? entry : undefined;
  const attribution = rule.mode === 'warn' ? 'untrusted' : attributeChange(layers, sameCopy, object, rule.config.creates === 'allow');
  if (attribution !== 'trusted') return revertOrWarn(input, entry, changed, attribution);
  const message = `A trusted write nests deeper than ${MAX_DEPTH} levels: spec-guard cannot compare, stamp or restore it, and no longer guards this object's canonical value (untrusted writes to it are still refused)`;
  return { kind: 'forget', why: 'trusted value too deep to guard', report: { reason: 'CannotBeGuarded', message } };
}

/** A new canonical value: from a fresh stamp, or attributed to a trusted writer (`restamp`: stamp it now). */
function keep(input: RepairInput, entry: CanonicalEntry, restamp: boolean): RepairPlan {
  const { entry: previous, tombstone, object, leader } = input;
  // A new canonical value (not spec-guard's own revert coming back) ends any fight. A new
  // sequence for the same value need not be stored: a replayed stamp of another value is
  // older than the stored sequence of the value it replaced.
  const newValue = !previous || previous.viewHash !== entry.viewHash;
  return {
    kind: 'keep',
    drifted: false,
    entry,
    store: newValue || (!restamp && storesListed(input)),
    endFight: newValue,
    // A trusted write brought the object back: the earlier delete no longer applies.
    clearTombstone: tombstone !== undefined && tombstone.uid !== object.metadata?.uid,
    stamp: restamp && leader ? stampPatch(object, entry.stamp) : [],
    purpose: 'restamp',
  };
}

/** An object a list shows canonical is known canonical as of the list's revision, which continuity may start from. */
function asListed(input: RepairInput, entry: CanonicalEntry): CanonicalEntry {
  if (!input.listedAt) return entry;
  return { ...entry, knownAt: laterRevision(entry.knownAt ?? entry.resourceVersion, input.listedAt) };
}

const storesListed = (input: RepairInput) => input.listedAt !== undefined && input.storeListed;

function revertOrWarn(input: RepairInput, entry: CanonicalEntry, changed: string[], attribution: Attribution, moveBack: PatchOp[] = []): RepairPlan {
  const { rule, object, leader } = input;
  const who = attribution === 'unattributed' ? 'An unattributed change (made in a blind window)' : 'An untrusted change';
  const pointers = changed.join(', ');
  if (rule.mode === 'warn') {
    const report = { reason: 'SpecDriftDetected', message: `${who} to ${pointers}; left in place (warn mode)` };
    return leader ? { kind: 'warn', drifted: false, detected: true, report } : { kind: 'none', drifted: false, detected: true };
  }
  if (!leader) return { kind: 'none', drifted: true, detected: true };
  const ops = [...rule.view.revertOps(entryValues(entry), object), ...moveBack, ...stampPatch(object, entry.stamp)];
  const report = { reason: 'SpecDriftReverted', message: `Reverted: ${who.toLowerCase()} to ${pointers}; it is owned by the source of truth` };
  return { kind: 'revert', drifted: true, detected: true, entry, ops, changed, attribution, report };
}

/**
 * A guarded object no longer in its selection (its labels or annotations changed behind
 * admission, which refuses such a write from anyone untrusted): forgotten when the guard
 * layer vouches that a trusted writer moved it, else moved back, its guarded paths restored.
 */
function planEscape(input: RepairInput): RepairPlan {
  const { entry, leader, rule, object, layers } = input;
  if (!entry || !leader) return { kind: 'none' };
  if (rule.mode !== 'warn' && !layers) return { kind: 'verify-layers' };
  const sameCopy = entry.uid === object.metadata?.uid ? entry : undefined;
  const attribution = rule.mode === 'warn' ? 'untrusted' : attributeChange(layers!, sameCopy, object, false);
  const accept = rule.config.blindWindow.changes === 'accept';
  const report = attribution === 'unattributed' ? unattributed([SELECTION], accept ? 'learn' : 'revert') : undefined;
  if (attribution === 'trusted' || (attribution === 'unattributed' && accept)) {
    return { kind: 'forget', why: 'guarded object moved out of its selection by a trusted write: no longer guarded', unattributed: report };
  }
  const moveBack = selectionRestoreOps(input.selectionKeys, { labels: entry.labels, annotations: entry.annotations }, object.metadata ?? {});
  const changed = [...rule.view.changedPointers(entryValues(entry), object), SELECTION];
  return withUnattributed(revertOrWarn(input, entry, changed, attribution, moveBack), report);
}

function planDelete(input: RepairInput): RepairPlan {
  const { entry, tombstone, rule, leader, layers, key } = input;
  const uid = input.object.metadata?.uid;
  if (!entry) return { kind: 'none' };
  const deleted = (by: string) => ({ kind: 'forget' as const, why: 'guarded object deleted', by });
  if (confirms(tombstone, uid)) return { ...deleted('trusted (tombstone)'), tombstone };
  if (rule.config.deletes === 'allow' || rule.mode === 'warn') return deleted(`allowed by the rule (${rule.mode}, deletes: ${rule.config.deletes})`);
  if (!leader) return { kind: 'none' };
  if (!layers) return { kind: 'verify-layers' };
  const attribution = attributeDelete(layers, entry);
  if (attribution === 'trusted') return deleted('trusted (the guard layer held throughout: no one else could delete it)');
  const report = attribution === 'unattributed' ? unattributed([], rule.config.blindWindow.deletes) : undefined;
  if (report?.action === 'keep-deleted') return { ...deleted('unattributed (a blind window): kept deleted'), unattributed: report };
  return { kind: 'recreate', body: recreation(key, entry), unattributed: report, report: { reason: 'DeletedObjectRecreated', message: 'Recreated from the canonical copy: it was deleted outside admission by someone other than the source of truth' } };
}

/** The object to create again: its identity, labels and annotations, and its canonical guarded values. */
function recreation(key: string, entry: CanonicalEntry): Record<string, unknown> {
  const { namespace, name } = parseObjectKey(key);
  const body: Record<string, unknown> = {
    apiVersion: entry.apiVersion,
    kind: entry.kind,
    metadata: { name, ...(namespace ? { namespace } : {}), labels: entry.labels, annotations: entry.annotations },
  };
  for (const [pointer, value] of Object.entries(entryValues(entry))) setAt(body, parsePointer(pointer), value);
  return body;
}
