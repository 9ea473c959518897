import { randomBytes, X509Certificate } from 'node:crypto';
import { CA_SECRET, pairOf, requestRotation, ROTATED_FOR, TLS_SECRET } from '../certs/index.js';
import { isNotFound, KubeClient, readSecret } from '../kube/index.js';
import { defineFlags, flag } from './flags.js';

export const rotateHelp = `Usage: spec-guard rotate [--ca] [--kubeconfig F] [--namespace NS] [--timeout S]

Asks the running spec-guard leader to rotate its serving certificate now (with --ca: a
new CA first, then the serving certificate once every webhook configuration trusts the
new CA), and waits until the new certificate is in the Secret every replica serves from.

Flags:
  --ca               rotate the CA too
  --kubeconfig F     kubeconfig (default: in-cluster, $KUBECONFIG or ~/.kube/config)
  --namespace NS     spec-guard's namespace (default: spec-guard)
  --timeout S        seconds to wait for the leader (default 120)`;

const rotateFlags = defineFlags({ ca: flag.switch(), kubeconfig: flag.kubeconfig, namespace: flag.namespace, timeout: flag.seconds(120, 1) });

export async function rotate(argv: string[]): Promise<number> {
  const flags = rotateFlags(argv);
  if (flags === 'help') {
    console.log(rotateHelp);
    return 0;
  }
  const { namespace, timeout: timeoutSeconds } = flags;
  const kube = await KubeClient.load(flags.kubeconfig);
  try {
    const token = `${new Date().toISOString()}-${randomBytes(4).toString('hex')}`;
    const target = flags.ca ? CA_SECRET : TLS_SECRET;
    try {
      await requestRotation(kube, namespace, target, token);
    } catch (err) {
      if (isNotFound(err)) throw new Error(`Secret ${namespace}/${target} not found: is spec-guard installed in namespace ${namespace}?`);
      throw err;
    }
    console.log(`rotation of ${flags.ca ? 'the CA and the serving certificate' : 'the serving certificate'} requested (${token})`);
    const deadline = Date.now() + timeoutSeconds * 1000;
    // A CA rotation ends with the serving certificate, which carries the same token.
    while (Date.now() < deadline) {
      const secret = await readSecret(kube, namespace, TLS_SECRET);
      const pair = pairOf(secret);
      if (pair && secret?.metadata.annotations?.[ROTATED_FOR] === token) {
        const cert = new X509Certificate(pair.cert);
        console.log(`serving certificate rotated: serial ${cert.serialNumber}, issuer ${cert.issuer.replace(/\n/g, ', ')}, valid until ${cert.validTo}`);
        return 0;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    console.error(`spec-guard rotate: not done after ${timeoutSeconds} s; is a spec-guard leader running in namespace ${namespace}? Its log says what it waits for.`);
    return 1;
  } finally {
    kube.close();
  }
}
