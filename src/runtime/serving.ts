import type { Server } from 'node:https';
import { expiryOf, type ServingMaterial } from '../certs/index.js';
import type { KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { WebhookRegistrar } from '../registration/index.js';
import type { ClientAuthentication } from '../webhook/index.js';
import { clientAuthFromCluster, clientAuthFromFile } from './client-auth.js';
import type { Component } from './lifecycle.js';
import type { RuntimeOptions } from './index.js';
import { servingHosts, servingTls } from './tls.js';

/** Who may post reviews, or undefined (anyone who reaches the port: said loudly). */
async function clientAuthentication(
  o: RuntimeOptions,
  kube: KubeClient | undefined,
  logger: Logger,
  onChange: () => void,
): Promise<{ auth?: () => ClientAuthentication; component?: Component }> {
  if (o.clientCaFile) {
    const auth = await clientAuthFromFile(o.clientCaFile);
    return { auth: () => auth };
  }
  if (o.clientCaFromCluster) {
    if (!kube) throw new Error('--client-ca-from-cluster needs a cluster (it reads kube-system/extension-apiserver-authentication)');
    return clientAuthFromCluster(kube, logger, onChange);
  }
  logger.warn('reviews are not authenticated: any pod that reaches the webhook port is answered and can have a spec stamped; set --client-ca-from-cluster or --client-ca-file');
  return {};
}

/**
 * The webhook port's TLS: the serving certificate (kept current by its keeper) and the
 * client authentication (kept current by its watch), applied to the server once attached:
 * new connections get the new certificate or CA, open ones finish on the old.
 */
export async function startServing(o: RuntimeOptions, d: { kube?: KubeClient; registrar?: WebhookRegistrar; logger: Logger; metrics: Metrics }) {
  let server: Server | undefined;
  let current: ServingMaterial | undefined;
  const serveWith = (m: ServingMaterial) => {
    current = m;
    const auth = clientAuth?.();
    server?.setSecureContext({ cert: m.cert, key: m.key, ...(auth ? { ca: auth.ca } : {}) });
    d.metrics.certificateExpiry.set({ certificate: 'serving' }, expiryOf(m.cert).getTime() / 1000);
  };
  const { auth: clientAuth, component: clientCaWatch } = await clientAuthentication(o, d.kube, d.logger, () => current && serveWith(current));
  const tls = await servingTls({ ...o, kube: d.kube, registrar: d.registrar, hosts: servingHosts(o), logger: d.logger, metrics: d.metrics, onServing: serveWith });
  serveWith(tls.material);
  return {
    tls,
    clientAuth,
    parts: [clientCaWatch, tls.keeper],
    attach: (s: Server) => {
      server = s;
    },
  };
}
