import { CertificateManager, createCA, createServingCert, TlsFileSource, type CaBundleTarget, type ServingMaterial, type TlsFiles } from '../certs/index.js';
import type { KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { unregisteredTarget } from '../registration/index.js';
import type { Component } from './lifecycle.js';

export interface ServingTlsOptions {
  /** Certificates from files (cert-manager and the like); else the self-managed Secrets with a cluster; else made up at start. */
  tlsFiles?: TlsFiles;
  kube?: KubeClient;
  /** The registrar, when this replica registers the webhooks: it publishes the CA bundle. */
  registrar?: CaBundleTarget;
  namespace: string;
  hosts: string[];
  caPropagationMs: number;
  logger: Logger;
  metrics: Metrics;
  /** Hot reload: called with each new serving certificate. */
  onServing(material: ServingMaterial): void;
}

/** The serving certificate to start with, and the part that keeps it current. */
export async function servingTls(o: ServingTlsOptions): Promise<{ material: ServingMaterial; keeper: Component }> {
  if (o.tlsFiles) {
    const files = new TlsFileSource(o.tlsFiles, o.logger, (material) => {
      o.onServing(material);
      void o.registrar?.publish(material.caBundle);
    });
    const material = files.load();
    await o.registrar?.publish(material.caBundle);
    return { material, keeper: { name: 'TLS files', start: () => files.start(), stop: () => files.stop() } };
  }
  if (o.kube) {
    const certificates = new CertificateManager({
      kube: o.kube,
      namespace: o.namespace,
      hosts: o.hosts,
      logger: o.logger,
      metrics: o.metrics,
      caPropagationMs: o.caPropagationMs,
      onServing: o.onServing,
      trust: o.registrar ?? unregisteredTarget(o.kube),
    });
    const material = await certificates.init();
    return { material, keeper: { name: 'certificates', stop: () => certificates.stop(), setLeading: (leading) => certificates.setLeading(leading) } };
  }
  const ca = createCA();
  return { material: { ...createServingCert(ca, o.hosts), caBundle: ca.cert }, keeper: { name: 'self-signed certificate' } };
}

/** Every name the serving certificate must cover: the Service's, the webhook URL's host, extra SANs. */
export function servingHosts(o: { webhookUrl?: string; serviceName: string; namespace: string; standalone: boolean; tlsSans: string[] }): string[] {
  const hosts = new Set<string>();
  if (o.webhookUrl) hosts.add(new URL(o.webhookUrl).hostname.replace(/^\[|\]$/g, ''));
  for (const name of [o.serviceName, `${o.serviceName}.${o.namespace}`, `${o.serviceName}.${o.namespace}.svc`, `${o.serviceName}.${o.namespace}.svc.cluster.local`]) {
    hosts.add(name);
  }
  if (o.standalone) ['localhost', '127.0.0.1'].forEach((h) => hosts.add(h));
  o.tlsSans.forEach((h) => hosts.add(h));
  return [...hosts];
}
