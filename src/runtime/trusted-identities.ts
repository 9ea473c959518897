import { KubeError, Resources, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';

const SERVICE_ACCOUNT = /^system:serviceaccount:([^:]+):([^:]+)$/;

/**
 * Does every trusted service account exist? An agent installed under another name or namespace
 * than the configuration trusts is refused by its own guard: said loudly at start (a log line
 * per missing identity, `spec_guard_trusted_identity_missing`, an alert), never fatal, since the
 * identity may yet be created. Users that are no service account cannot be checked.
 */
export async function checkTrustedIdentities(kube: KubeClient, users: string[], logger: Logger, metrics: Metrics): Promise<void> {
  for (const user of users) {
    const match = SERVICE_ACCOUNT.exec(user);
    if (!match) continue;
    const [, namespace, name] = match;
    try {
      const found = await Resources.of(kube, '', 'v1', 'serviceaccounts', namespace).get(name!, { timeoutMs: 5000 });
      metrics.trustedIdentityMissing.set({ identity: user }, found ? 0 : 1);
      if (!found) logger.error('a trusted identity does not exist: its writes are refused as anyone else’s; check trust.users against the agent’s service account', { user });
    } catch (err) {
      if (err instanceof KubeError && err.status === 403) {
        logger.info('cannot check that a trusted service account exists (no RBAC to get service accounts)', { user });
      } else {
        logger.warn('checking a trusted service account failed', { user, error: (err as Error).message });
      }
    }
  }
}
