import type { Policy } from '../guard/index.js';

/** One list+watch: a resource, cluster-wide or in one namespace. */
export interface WatchScope {
  group: string;
  version: string;
  resource: string;
  /** Undefined: every namespace. */
  namespace?: string;
}

/**
 * The watches the policy needs: per namespace when every rule of a resource names its
 * namespaces (so spec-guard needs no cluster-wide read, e.g. of Secrets), else one
 * cluster-wide watch.
 */
export function watchScopes(policy: Policy): WatchScope[] {
  const byResource = new Map<string, { group: string; version: string; resource: string; namespaces: Set<string> | undefined }>();
  for (const rule of policy.rules) {
    const { group, version, resource, namespaces } = rule.config;
    const id = `${group}/${version}/${resource}`;
    const current = byResource.get(id);
    if (!current) byResource.set(id, { group, version, resource, namespaces: namespaces ? new Set(namespaces) : undefined });
    else if (!namespaces) current.namespaces = undefined;
    else namespaces.forEach((ns) => current.namespaces?.add(ns));
  }
  return [...byResource.values()].flatMap(({ namespaces, ...gvr }) =>
    namespaces ? [...namespaces].map((namespace) => ({ ...gvr, namespace })) : [gvr],
  );
}
