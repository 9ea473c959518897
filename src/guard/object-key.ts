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
