import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/index.js';

/** A client of a plain-HTTP server at `server`, no credentials. */
export function plainHttpClient(server: string): Promise<KubeClient> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return KubeClient.fromKubeConfig(kc);
}
