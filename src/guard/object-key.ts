/** Identifies a guarded object across versions: group/resource/namespace/name. */
export function objectKey(group: string, resource: string, namespace: string | undefined, name: string): string {
  return `${group}/${resource}/${namespace ?? ''}/${name}`;
}

/** The parts of an object key (the name may contain no slash, but is taken whole anyway). */
export function parseObjectKey(key: string): { group: string; resource: string; namespace: string; name: string } {
  const [group = '', resource = '', namespace = '', ...name] = key.split('/');
  return { group, resource, namespace, name: name.join('/') };
}

/** A resource as Kubernetes names it (applications.argoproj.io; secrets for the core group): in metric labels, logs and status. */
export function resourceName(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

/**
 * The name of the object a review is about. The apiserver leaves `name` empty in the reviews of
 * a deletecollection (one per item): the old object names it then.
 */
export function reviewedName(req: { name?: string; object?: { metadata?: { name?: string } } | null; oldObject?: { metadata?: { name?: string } } | null }): string {
  return req.name || req.oldObject?.metadata?.name || req.object?.metadata?.name || '';
}
