import { decodeSecretData, encodeSecretData, isConflict, Resources, secretPath, type KubeClient, type Secret } from '../kube/index.js';
import type { KeyPair } from './generate.js';
import { CA_SECRET, MANAGED_BY_LABEL, TLS_SECRET } from '../names.js';

export { TLS_SECRET, CA_SECRET };
/** Set (to any token) by `spec-guard rotate` to ask the leader for a rotation. */
export const ROTATE_REQUESTED = 'spec-guard.io/rotate-requested';
/** Set by the leader to the token of the request it has carried out. */
export const ROTATED_FOR = 'spec-guard.io/rotated-for';
/** Key of the CA Secret holding every CA still trusted (the current one first). */
export const CA_BUNDLE_KEY = 'ca-bundle.crt';

export interface ServingMaterial {
  cert: string;
  key: string;
  /** PEM bundle the apiserver must trust. */
  caBundle: string;
}

/** The key pair in a kubernetes.io/tls Secret, or undefined when either half is absent. */
export function pairOf(secret: Secret | undefined): KeyPair | undefined {
  if (!secret) return undefined;
  const data = decodeSecretData(secret);
  const cert = data['tls.crt']?.toString('utf8');
  const key = data['tls.key']?.toString('utf8');
  return cert && key ? { cert, key } : undefined;
}

export function secretText(secret: Secret | undefined, key: string): string | undefined {
  const value = secret?.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

export const rotationRequest = (secret: Secret | undefined): string | undefined => secret?.metadata.annotations?.[ROTATE_REQUESTED];

/**
 * Writes a spec-guard TLS Secret: creates it when `current` is undefined, else replaces it
 * at `current`'s resourceVersion. A carried-out rotation request is acknowledged. Returns
 * undefined on a conflict (another replica wrote first; the caller reads again).
 */
export async function writeTlsSecret(
  kube: KubeClient,
  namespace: string,
  name: string,
  current: Secret | undefined,
  data: Record<string, string>,
): Promise<Secret | undefined> {
  const kept = { ...current?.metadata.annotations };
  const request = kept[ROTATE_REQUESTED];
  delete kept[ROTATE_REQUESTED];
  if (request) kept[ROTATED_FOR] = request;
  const body: Secret = {
    metadata: {
      name,
      namespace,
      resourceVersion: current?.metadata.resourceVersion,
      labels: { ...current?.metadata.labels, ...MANAGED_BY_LABEL },
      annotations: kept,
    },
    // The type is immutable: a Secret made by someone else keeps its own.
    type: current?.type ?? 'kubernetes.io/tls',
    data: encodeSecretData(data),
  };
  try {
    // PUT at the version read (a rotation request that arrived since is not lost), or create.
    return await new Resources<Secret>(kube, secretPath(namespace)).write(body);
  } catch (err) {
    if (isConflict(err)) return undefined;
    throw err;
  }
}

/** Asks the running leader for a rotation of Secret `name`; the token identifies the request. */
export async function requestRotation(kube: KubeClient, namespace: string, name: string, token: string): Promise<void> {
  await new Resources<Secret>(kube, secretPath(namespace)).mergePatch(name, { metadata: { annotations: { [ROTATE_REQUESTED]: token } } });
}
