import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { CertificateManager, createCA, createServingCert, expiryOf, TlsFileSource, type ServingMaterial, type TlsFiles } from './certs/index.js';
import type { Config } from './config/index.js';
import { preflight } from './preflight.js';
import { EventRecorder, KubeClient } from './kube/index.js';
import { createLogger, type Logger, type LogLevel } from './log/index.js';
import { createMetricsServer, Metrics } from './metrics/index.js';
import { CanonicalCache, createStore, LeaderElector, NamespaceLabelCache, stamperFromFile, stamperFromSecret, Watcher } from './sync/index.js';
import { objectKey, Policy, Stamper } from './guard/index.js';
import { createWebhookServer } from './webhook/index.js';
import { unregisteredTarget, ContinuityMonitor, currentRevision, renderAdmissionObjects, WebhookRegistrar, type WebhookEndpoint } from './registration/index.js';
import { SPEC_GUARD } from './names.js';


export interface RuntimeOptions {
  config: Config;
  configFile: string;
  port: number;
  bindAddress: string;
  metricsPort: number;
  tlsFiles?: TlsFiles;
  caPropagationMs: number;
  tlsSans: string[];
  /** CA of the client certificate the apiserver presents; reviews without it are refused. */
  clientCaFile?: string;
  stampKeyFile?: string;
  standalone: boolean;
  kubeconfig?: string;
  namespace: string;
  serviceName: string;
  webhookUrl?: string;
  register: boolean;
  logLevel: LogLevel;
  leaseDurationSeconds: number;
  /** Leader election identity (default: host, pid and a random suffix). */
  identity?: string;
}

export interface Runtime {
  webhookPort: number;
  metricsPort: number;
  shutdown(reason: string): Promise<void>;
}

/** Connects and checks the API answers, so a wrong kubeconfig fails at start, clearly. */
async function connect(kubeconfig: string | undefined): Promise<KubeClient> {
  let kube: KubeClient;
  try {
    kube = await KubeClient.load(kubeconfig);
  } catch (err) {
    throw new Error(`cannot load the kubeconfig${kubeconfig ? ` ${kubeconfig}` : ''}: ${(err as Error).message}; pass --kubeconfig, or --standalone to run admission only`);
  }
  try {
    await kube.request('GET', '/version', { timeoutMs: 5000 });
  } catch (err) {
    kube.close();
    throw new Error(
      `cannot reach the Kubernetes API at ${kube.kubeConfig.getCurrentCluster()?.server}: ${(err as Error).message}; pass --kubeconfig, or --standalone to run admission only`,
    );
  }
  return kube;
}

/** spec-guard's own username, always trusted so that its reverts pass its own webhook. */
async function whoAmI(kube: KubeClient): Promise<string | undefined> {
  const review = await kube.request<{ status?: { userInfo?: { username?: string } } }>(
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
  );
  return review.status?.userInfo?.username;
}

function servingHosts(o: RuntimeOptions): string[] {
  const hosts = new Set<string>();
  if (o.webhookUrl) hosts.add(new URL(o.webhookUrl).hostname.replace(/^\[|\]$/g, ''));
  for (const name of [o.serviceName, `${o.serviceName}.${o.namespace}`, `${o.serviceName}.${o.namespace}.svc`, `${o.serviceName}.${o.namespace}.svc.cluster.local`]) {
    hosts.add(name);
  }
  if (o.standalone) ['localhost', '127.0.0.1'].forEach((h) => hosts.add(h));
  o.tlsSans.forEach((h) => hosts.add(h));
  return [...hosts];
}

function readClientCa(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`--client-ca-file: cannot read ${file}: ${(err as Error).message}`);
  }
}

function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`${what}: cannot listen on ${host}:${port}: ${err.message}`)));
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

export async function startRuntime(o: RuntimeOptions): Promise<Runtime> {
  const logger: Logger = createLogger(o.logLevel);
  const metrics = new Metrics();
  const cache = new CanonicalCache();
  const kube = o.standalone ? undefined : await connect(o.kubeconfig);
  const selfUser = kube ? await whoAmI(kube) : undefined;
  const policy = new Policy(o.config, selfUser);
  if (kube) {
    try {
      await preflight(kube, policy, { namespace: o.namespace, register: o.register });
    } catch (err) {
      kube.close();
      throw err;
    }
  }
  const stamper = o.stampKeyFile
    ? stamperFromFile(o.stampKeyFile)
    : kube
      ? await stamperFromSecret(kube, o.namespace)
      : new Stamper(Stamper.generateKey());

  const hosts = servingHosts(o);
  const clientCa = o.clientCaFile ? readClientCa(o.clientCaFile) : undefined;
  let server: ReturnType<typeof createWebhookServer> | undefined;
  let registrar: WebhookRegistrar | undefined;
  if (kube && o.register) {
    const endpoint: WebhookEndpoint = o.webhookUrl
      ? { url: o.webhookUrl }
      : { service: { name: o.serviceName, namespace: o.namespace, port: 443 } };
    const render = (caBundle: string) => renderAdmissionObjects(policy, { endpoint, caBundle, excludedNamespaces: ['kube-system', o.namespace] });
    registrar = new WebhookRegistrar(kube, render, '', metrics, logger);
  }
  const recordExpiry = (m: ServingMaterial) => metrics.certificateExpiry.set({ certificate: 'serving' }, expiryOf(m.cert).getTime() / 1000);
  // Hot reload: new TLS connections get the new certificate; open ones finish on the old.
  const serveWith = (m: ServingMaterial) => {
    server?.setSecureContext({ cert: m.cert, key: m.key, ...(clientCa ? { ca: clientCa } : {}) });
    recordExpiry(m);
  };
  let certificates: CertificateManager | undefined;
  let tlsFiles: TlsFileSource | undefined;
  let tls: ServingMaterial;
  if (o.tlsFiles) {
    tlsFiles = new TlsFileSource(o.tlsFiles, logger, (m) => {
      serveWith(m);
      void registrar?.publish(m.caBundle);
    });
    tls = tlsFiles.load();
    await registrar?.publish(tls.caBundle);
  } else if (kube) {
    certificates = new CertificateManager({
      kube,
      namespace: o.namespace,
      hosts,
      logger,
      metrics,
      caPropagationMs: o.caPropagationMs,
      onServing: serveWith,
      trust: registrar ?? unregisteredTarget(kube),
    });
    tls = await certificates.init();
  } else {
    const ca = createCA();
    tls = { ...createServingCert(ca, hosts), caBundle: ca.cert };
  }
  recordExpiry(tls);

  const store = createStore(o.standalone ? { ...o.config.store, type: 'memory' } : o.config.store, kube, o.namespace, logger.error);

  let ready = false;
  // Rules that select namespaces by label read them from a watch of the namespaces.
  const namespaces = kube && policy.readsNamespaceLabels ? new NamespaceLabelCache(kube, logger) : undefined;
  await namespaces?.start();
  const decisionBase = { policy, canonical: cache, stamper, namespaceLabels: namespaces?.get };
  server = createWebhookServer({
    tls,
    clientCa,
    decisionContext: () => ({ ...decisionBase, now: Date.now() }),
    metrics,
    logger,
    isReady: () => ready,
    knowNamespace: namespaces && ((namespace) => namespaces.ensure(namespace)),
    recordTombstone: async (req) => {
      const key = objectKey(req.resource.group, req.resource.resource, req.namespace, req.name ?? '');
      const tombstone = { uid: req.oldObject?.metadata?.uid, at: new Date().toISOString() };
      cache.recordTombstone(key, tombstone);
      await store.addTombstone(key, tombstone);
    },
  });
  const metricsServer = createMetricsServer(metrics, () => ready);
  const webhookPort = await listen(server, o.port, o.bindAddress, 'webhook');
  const metricsPort = await listen(metricsServer, o.metricsPort, o.bindAddress, 'metrics');

  tlsFiles?.start();

  let watcher: Watcher | undefined;
  let elector: LeaderElector | undefined;
  let continuity: ContinuityMonitor | undefined;
  let servingSince: { since: string; sinceTime: number } | undefined;
  if (kube) {
    const events = new EventRecorder(kube, o.identity ?? SPEC_GUARD, (err) => logger.warn('event not recorded', { error: err.message }));
    const snapshot = await store.load();
    continuity = new ContinuityMonitor(
      {
        kube,
        policy,
        namespace: o.namespace,
        serving: () => servingSince,
        save: (record) => store.saveContinuity(record),
        isLeader: () => elector?.isLeader ?? false,
        logger,
        metrics,
        onEstablished: () => watcher?.onLayersEstablished(),
      },
      snapshot.continuity,
    );
    elector = new LeaderElector(
      kube,
      { namespace: o.namespace, name: SPEC_GUARD, leaseDurationSeconds: o.leaseDurationSeconds, identity: o.identity },
      logger,
      (leading) => {
        metrics.leader.set(leading ? 1 : 0);
        watcher?.onLeadershipChange(leading);
        certificates?.setLeading(leading);
        if (leading) continuity?.persist().catch((err: Error) => logger.warn('storing the admission layers’ continuity failed', { error: err.message }));
        registrar?.setActive(leading).catch((err: Error) => logger.error('webhook registration failed', { error: err.message }));
      },
    );
    const monitor = continuity;
    watcher = new Watcher({
      kube,
      policy,
      cache,
      store,
      stamper,
      metrics,
      logger,
      events,
      isLeader: () => elector!.isLeader,
      namespaces,
      verifyLayers: monitor.verify,
      layersIfGuardBroken: () => (monitor.guardKnownBroken() ? monitor.lastVerified() : undefined),
    });
    // One election round first, so that a replica that leads from the start acts on its
    // first list. The stored canonical values are loaded before that list, so drift made
    // while spec-guard was down is reverted at start; a replica that becomes leader later
    // examines everything again then.
    await elector.start();
    // The leader registers before reporting ready, so that admission is on from then.
    if (elector.isLeader) await registrar?.setActive(true);
    // From here this replica stamps every trusted write it is sent: the stamp layer's start.
    servingSince = await currentRevision(kube);
    continuity.start();
    await watcher.start(snapshot);
  }
  ready = true;
  logger.info('spec-guard ready', {
    webhookPort,
    metricsPort,
    mode: kube ? 'cluster' : 'standalone',
    selfUser,
    config: o.configFile,
    registered: Boolean(registrar),
    store: store.description,
    identity: elector?.identity,
  });

  return {
    webhookPort,
    metricsPort,
    async shutdown(reason: string) {
      ready = false;
      logger.info('shutting down: draining in-flight requests', { reason });
      registrar?.stop();
      continuity?.stop();
      certificates?.stop();
      tlsFiles?.stop();
      await watcher?.stop();
      namespaces?.stop();
      await elector?.stop();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, 10_000);
        // Keep-alive connections become idle as their last response goes out: close them
        // then, so that close() completes as soon as the in-flight requests are answered.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearTimeout(force);
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      });
      metricsServer.close();
      kube?.close();
    },
  };
}
