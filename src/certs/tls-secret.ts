import { decodeSecretData, encodeSecretData, isConflict, readOrCreateSecret, secretPath, type KubeClient, type Secret } from '../kube/index.js';
import { createCA, createServingCert, type KeyPair } from './generate.js';
import { servingCertProblem } from './inspect.js';

export const TLS_SECRET = 'spec-guard-tls';
export const CA_SECRET = 'spec-guard-ca';

export interface ServingMaterial {
  cert: string;
  key: string;
  /** PEM bundle the apiserver must trust. */
  caBundle: string;
}

function pairFrom(secret: Secret, what: string): KeyPair {
  const data = decodeSecretData(secret);
  const cert = data['tls.crt']?.toString('utf8');
  const key = data['tls.key']?.toString('utf8');
  if (!cert || !key) throw new Error(`Secret ${secret.metadata.namespace}/${secret.metadata.name} (${what}) lacks tls.crt or tls.key`);
  return { cert, key };
}

/**
 * The serving certificate kept in Secrets (the CA apart, in its own Secret), created on
 * first use and renewed when it no longer fits `hosts` or nears its end. Safe when
 * several replicas start at once: the first create wins and the others read it.
 */
export async function ensureServingMaterial(
  kube: KubeClient,
  namespace: string,
  hosts: string[],
  log: (msg: string, fields?: Record<string, unknown>) => void,
): Promise<ServingMaterial> {
  const caSecret = await readOrCreateSecret(kube, namespace, CA_SECRET, () => {
    const ca = createCA();
    return { type: 'kubernetes.io/tls', data: { 'tls.crt': ca.cert, 'tls.key': ca.key } };
  });
  const ca = pairFrom(caSecret, 'CA');
  const issue = () => createServingCert(ca, hosts);
  let tlsSecret = await readOrCreateSecret(kube, namespace, TLS_SECRET, () => {
    const serving = issue();
    return { type: 'kubernetes.io/tls', data: { 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': ca.cert } };
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    const problem = (() => {
      try {
        return servingCertProblem(pairFrom(tlsSecret, 'serving').cert, ca.cert, hosts);
      } catch (err) {
        return (err as Error).message;
      }
    })();
    if (!problem) break;
    log('renewing the serving certificate', { secret: `${namespace}/${TLS_SECRET}`, reason: problem });
    const serving = issue();
    const body: Secret = {
      ...tlsSecret,
      type: 'kubernetes.io/tls',
      data: encodeSecretData({ 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': ca.cert }),
    };
    try {
      tlsSecret = await kube.request<Secret>('PUT', secretPath(namespace, TLS_SECRET), { body });
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Another replica renewed it first: re-read and check theirs.
      tlsSecret = await kube.request<Secret>('GET', secretPath(namespace, TLS_SECRET));
    }
  }
  const serving = pairFrom(tlsSecret, 'serving');
  return { cert: serving.cert, key: serving.key, caBundle: ca.cert };
}
