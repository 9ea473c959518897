/** REST paths of a guarded resource (group "" is the core API). */
export function collectionPath(group: string, version: string, resource: string, namespace?: string): string {
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
}

export function objectPath(group: string, version: string, resource: string, namespace: string | undefined, name: string): string {
  return `${collectionPath(group, version, resource, namespace || undefined)}/${encodeURIComponent(name)}`;
}
