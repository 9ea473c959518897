/** REST paths of a guarded resource (group "" is the core API). */
export function collectionPath(group: string, version: string, resource: string, namespace?: string): string {
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
}

export function objectPath(group: string, version: string, resource: string, namespace: string | undefined, name: string): string {
  return `${collectionPath(group, version, resource, namespace || undefined)}/${encodeURIComponent(name)}`;
}

/** The parts of an object key: group/resource/namespace/name. */
export function parseObjectKey(key: string): { group: string; resource: string; namespace: string; name: string } {
  const [group = '', resource = '', namespace = '', ...name] = key.split('/');
  return { group, resource, namespace, name: name.join('/') };
}
