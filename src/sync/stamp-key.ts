import { readFileSync } from 'node:fs';
import { decodeSecretData, readOrCreateSecret, type KubeClient } from '../kube/index.js';
import { Stamper } from '../guard/index.js';
import { STAMP_KEY_SECRET } from '../names.js';

export { STAMP_KEY_SECRET };

/** The stamp key from a file (raw bytes, at least 32). */
export function stamperFromFile(file: string): Stamper {
  let key: Buffer;
  try {
    key = readFileSync(file);
  } catch (err) {
    throw new Error(`--stamp-key-file ${file}: cannot read: ${(err as Error).message}`);
  }
  try {
    return new Stamper(key);
  } catch (err) {
    throw new Error(`--stamp-key-file ${file}: ${(err as Error).message}`);
  }
}

/** The stamp key shared by every replica, kept in a Secret only spec-guard reads. */
export async function stamperFromSecret(kube: KubeClient, namespace: string): Promise<Stamper> {
  const secret = await readOrCreateSecret(kube, namespace, STAMP_KEY_SECRET, () => ({ data: { key: Stamper.generateKey() } }));
  const key = decodeSecretData(secret).key;
  if (!key) throw new Error(`Secret ${namespace}/${STAMP_KEY_SECRET} has no "key" entry; delete it to have a new key generated`);
  return new Stamper(key);
}
