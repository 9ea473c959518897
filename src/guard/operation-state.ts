import { canonicalJson } from './canonical-json.js';
import { entryValues, type CanonicalEntry } from './canonical-entry.js';
import { isPlainObject } from './pointer.js';
import type { Unattributed } from './repair.js';
import type { KubeObject } from '../kube/types.js';

/**
 * Argo CD resumes an operation in progress from `status.operationState`, not from `.operation`
 * (controller/appcontroller.go, processRequestedAppOperation). Its own state always carries the
 * operation it was given; one in progress whose sync deploys something else (its own
 * manifests, source or sources) was written past admission: it cannot be undone before the
 * controller acts, so it is reported. Status has no canonical copy, so this is the only trace.
 */
const IN_PROGRESS = new Set(['Running', 'Terminating']);

/** What a sync operation deploys besides the spec: the parts the controller never rewrites. */
function deploys(operation: unknown): string {
  const sync = isPlainObject(operation) && isPlainObject(operation.sync) ? operation.sync : {};
  return canonicalJson({ manifests: sync.manifests, source: sync.source, sources: sync.sources }) ?? '';
}

export function forgedOperationState(object: KubeObject, entry: CanonicalEntry | undefined): Unattributed | undefined {
  const status = isPlainObject(object.status) ? object.status : undefined;
  const state = status && isPlainObject(status.operationState) ? status.operationState : undefined;
  if (!state || !IN_PROGRESS.has(state.phase as string)) return undefined;
  const resumed = deploys(state.operation);
  const given = [deploys(object.operation), ...(entry ? [deploys(entryValues(entry)['/operation'])] : [])];
  if (given.includes(resumed)) return undefined;
  const message =
    'status.operationState holds an operation in progress that deploys what no operation of the source of truth or the controller asked for (written past admission); Argo CD resumes from it. Check what it deployed; terminate it on this cluster if it still runs';
  return { change: 'update', changed: ['/status/operationState'], action: 'report', report: { reason: 'ForgedOperationState', message } };
}
