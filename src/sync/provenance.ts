import type { ManagedFieldsEntry } from '../webhook/admission-types.js';
import { parsePointer } from './pointer.js';

/** Does a managedFields fieldsV1 tree own anything at or below `tokens`? */
function touches(fields: Record<string, unknown> | undefined, tokens: string[]): boolean {
  let node: unknown = fields;
  for (const token of tokens) {
    if (typeof node !== 'object' || node === null) return false;
    node = (node as Record<string, unknown>)[`f:${token}`];
    if (node === undefined) return false;
  }
  return true;
}

export interface LastWriter {
  /** Field manager of the newest managedFields entry over the guarded paths. */
  manager: string | undefined;
  /** True when every newest entry (managedFields times have one-second resolution) is trusted. */
  trusted: boolean;
}

/**
 * Who last wrote the guarded paths, from managedFields: the newest entry (status
 * subresource excluded) that owns a field at or below a guarded pointer. Field manager
 * names are chosen by clients, so this is evidence for writes made while admission was
 * bypassed, not proof; stamps are the proof.
 */
export function lastGuardedWriter(
  managedFields: ManagedFieldsEntry[] | undefined,
  guardedPointers: string[],
  trustedManagers: ReadonlySet<string>,
): LastWriter {
  const paths = guardedPointers.map(parsePointer);
  let newest = '';
  let managers: string[] = [];
  for (const entry of managedFields ?? []) {
    if (entry.subresource || !paths.some((tokens) => touches(entry.fieldsV1, tokens))) continue;
    const time = entry.time ?? '';
    if (time > newest) {
      newest = time;
      managers = [entry.manager ?? ''];
    } else if (time === newest) {
      managers.push(entry.manager ?? '');
    }
  }
  return {
    manager: managers.at(-1),
    trusted: managers.length > 0 && managers.every((m) => trustedManagers.has(m)),
  };
}
