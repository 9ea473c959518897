/** Identifies a guarded object across versions: group/resource/namespace/name. */
export function objectKey(group: string, resource: string, namespace: string | undefined, name: string): string {
  return `${group}/${resource}/${namespace ?? ''}/${name}`;
}
