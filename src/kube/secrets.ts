import type { Secret as CoreSecret } from 'kubernetes-types/core/v1.js';
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';
import { isConflict, type KubeClient } from './client.js';
import { Resources } from './resources.js';
import { MANAGED_BY_LABEL } from '../names.js';

/** A Secret as JSON on the wire (kubernetes-types), as spec-guard writes and reads its own: named, in a namespace. */
export type Secret = Omit<CoreSecret, 'metadata'> & { metadata: ObjectMeta & { name: string; namespace: string } };

export const secretPath = (namespace: string, name?: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets${name ? `/${encodeURIComponent(name)}` : ''}`;

export function decodeSecretData(secret: Secret): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

export function encodeSecretData(data: Record<string, string | Buffer>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

export function readSecret(kube: KubeClient, namespace: string, name: string): Promise<Secret | undefined> {
  return new Resources<Secret>(kube, secretPath(namespace)).get(name);
}

/**
 * Reads the Secret, or creates it with `make()` when absent. Race-safe across replicas:
 * when another replica created it first (409), its Secret is read and used.
 */
export async function readOrCreateSecret(
  kube: KubeClient,
  namespace: string,
  name: string,
  make: () => { type?: string; data: Record<string, string | Buffer> },
): Promise<Secret> {
  const existing = await readSecret(kube, namespace, name);
  if (existing) return existing;
  const { type, data } = make();
  const body: Secret = {
    metadata: { name, namespace, labels: { ...MANAGED_BY_LABEL } },
    type: type ?? 'Opaque',
    data: encodeSecretData(data),
  };
  try {
    return await kube.request<Secret>('POST', secretPath(namespace), { body });
  } catch (err) {
    if (!isConflict(err)) throw err;
    const winner = await readSecret(kube, namespace, name);
    if (!winner) throw err;
    return winner;
  }
}
