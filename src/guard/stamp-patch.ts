import type { KubeObject } from '../kube/types.js';
import type { PatchOp } from './guarded-view.js';
import { STAMP_ANNOTATION, STAMP_POINTER } from './stamp.js';

/**
 * JSON patch that gives `object` the stamp annotation `stamp` (removes it when undefined),
 * creating metadata.annotations when absent; empty when the object carries it already.
 * Used by /mutate and by the watcher's reverts and re-stamps alike.
 */
export function stampPatch(object: KubeObject, stamp: string | undefined): PatchOp[] {
  const current = object.metadata?.annotations?.[STAMP_ANNOTATION];
  if (current === stamp) return [];
  if (stamp === undefined) return [{ op: 'remove', path: STAMP_POINTER }];
  if (!object.metadata?.annotations) return [{ op: 'add', path: '/metadata/annotations', value: { [STAMP_ANNOTATION]: stamp } }];
  return [{ op: 'add', path: STAMP_POINTER, value: stamp }];
}
