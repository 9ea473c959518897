import { KubeClient, Resources, serverVersion } from '../kube/index.js';
import { preflight } from '../preflight.js';
import type { Policy } from '../guard/index.js';

const HINT = 'pass --kubeconfig, or --standalone to run admission only';

/** Connects and checks the API answers, so a wrong kubeconfig fails at start, clearly. */
export async function connect(kubeconfig: string | undefined): Promise<KubeClient> {
  let kube: KubeClient;
  try {
    kube = await KubeClient.load(kubeconfig);
  } catch (err) {
    throw new Error(`cannot load the kubeconfig${kubeconfig ? ` ${kubeconfig}` : ''}: ${(err as Error).message}; ${HINT}`);
  }
  try {
    await serverVersion(kube);
  } catch (err) {
    kube.close();
    throw new Error(`cannot reach the Kubernetes API at ${kube.kubeConfig.getCurrentCluster()?.server}: ${(err as Error).message}; ${HINT}`);
  }
  return kube;
}

/** spec-guard's own username (a SelfSubjectReview), always trusted so that its reverts pass its own webhook. */
export async function whoAmI(kube: KubeClient): Promise<string | undefined> {
  const review = await Resources.of(kube, 'authentication.k8s.io', 'v1', 'selfsubjectreviews').create<{ status?: { userInfo?: { username?: string } } }>({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  return review.status?.userInfo?.username;
}

/** The checks `serve` runs before it touches anything; a failure closes the connection. */
export async function checkBeforeStart(kube: KubeClient, policy: Policy, namespace: string, register: boolean): Promise<void> {
  try {
    await preflight(kube, policy, { namespace, register });
  } catch (err) {
    kube.close();
    throw err;
  }
}
