import type { TlsFiles } from '../certs/index.js';
import type { Config } from '../config/index.js';
import { Policy, Stamper, type Layers } from '../guard/index.js';
import { EventRecorder, type KubeClient } from '../kube/index.js';
import { createLogger, type Logger, type LogLevel } from '../log/index.js';
import { createMetricsServer, Metrics } from '../metrics/index.js';
import { ContinuityMonitor, currentRevision, renderAdmissionObjects, WebhookRegistrar, type WebhookEndpoint } from '../registration/index.js';
import { CanonicalCache, createStore, LeaderElector, NamespaceLabelCache, stamperFromFile, stamperFromSecret, tombstoneRecorder, Watcher, type WatcherDeps } from '../sync/index.js';
import { createWebhookServer } from '../webhook/index.js';
import { SPEC_GUARD } from '../names.js';
import { checkBeforeStart, connect, whoAmI } from './cluster.js';
import { checkTrustedIdentities } from './trusted-identities.js';
import { drain, listen } from './http.js';
import { Lifecycle, type Component } from './lifecycle.js';
import { startServing } from './serving.js';

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
  /** The same, read from what the apiserver publishes (its front-proxy CA and names), kept current. */
  clientCaFromCluster: boolean;
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

/** The wiring: what runs, in which order, and who hears about leadership. */
export async function startRuntime(o: RuntimeOptions): Promise<Runtime> {
  const logger = createLogger(o.logLevel);
  const metrics = new Metrics();
  const cache = new CanonicalCache();
  metrics.countCanonicalObjects(() => cache.countsByResource());
  const kube = o.standalone ? undefined : await connect(o.kubeconfig);
  const selfUser = kube ? await whoAmI(kube) : undefined;
  const policy = new Policy(o.config, selfUser);
  if (kube) await checkBeforeStart(kube, policy, o.namespace, o.register);
  const stamper = o.stampKeyFile ? stamperFromFile(o.stampKeyFile) : kube ? await stamperFromSecret(kube, o.namespace) : new Stamper(Stamper.generateKey());
  const registrar = kube && o.register ? registrarFor(o, kube, policy, metrics, logger) : undefined;

  const serving = await startServing(o, { kube, registrar, logger, metrics });
  const store = createStore(o.standalone ? { ...o.config.store, type: 'memory' } : o.config.store, kube, o.namespace, logger.error);
  // Rules that select namespaces by label read them from a watch of the namespaces.
  const namespaces = kube && policy.readsNamespaceLabels ? new NamespaceLabelCache(kube, logger) : undefined;
  let ready = false;
  // The admission layers as last verified (once the cluster parts run): admission reads them.
  const layers: { current: () => Layers | undefined } = { current: () => undefined };
  const server = createWebhookServer({
    tls: serving.tls.material,
    clientAuth: serving.clientAuth,
    decisionContext: () => ({ policy, canonical: cache, stamper, namespaceLabels: namespaces?.get, now: Date.now(), layers: layers.current() }),
    metrics,
    logger,
    knowNamespace: namespaces && ((namespace) => namespaces.ensure(namespace)),
    recordTombstone: tombstoneRecorder(cache, store),
  });
  const metricsServer = createMetricsServer(metrics, () => ready);
  const parts = new Lifecycle(logger);
  serving.attach(server);
  parts.add(...serving.parts, namespaces && { name: 'namespace labels', start: () => namespaces.start(), stop: () => namespaces.stop() });
  await parts.start();
  const webhookPort = await listen(server, o.port, o.bindAddress, 'webhook');
  const metricsPort = await listen(metricsServer, o.metricsPort, o.bindAddress, 'metrics');
  const identity = kube ? await addClusterParts(parts, { o, kube, policy, cache, store, stamper, metrics, logger, registrar, namespaces, layers }) : undefined;
  await parts.start();
  ready = true;
  logger.info('spec-guard ready', { webhookPort, metricsPort, mode: kube ? 'cluster' : 'standalone', selfUser, config: o.configFile, registered: Boolean(registrar), store: store.description, identity });

  return {
    webhookPort,
    metricsPort,
    async shutdown(reason: string) {
      ready = false;
      logger.info('shutting down: draining in-flight requests', { reason });
      await parts.stop();
      await drain(server);
      metricsServer.close();
      kube?.close();
    },
  };
}

function registrarFor(o: RuntimeOptions, kube: KubeClient, policy: Policy, metrics: Metrics, logger: Logger): WebhookRegistrar {
  const endpoint: WebhookEndpoint = o.webhookUrl ? { url: o.webhookUrl } : { service: { name: o.serviceName, namespace: o.namespace, port: 443 } };
  const render = (caBundle: string) => renderAdmissionObjects(policy, { endpoint, caBundle, excludedNamespaces: ['kube-system', o.namespace] });
  return new WebhookRegistrar(kube, render, '', metrics, logger);
}

type ClusterDeps = Pick<WatcherDeps, 'kube' | 'policy' | 'cache' | 'store' | 'stamper' | 'metrics' | 'logger'> & {
  o: RuntimeOptions;
  registrar?: WebhookRegistrar;
  namespaces?: NamespaceLabelCache;
  /** Where admission finds the layers as last verified. */
  layers: { current: () => Layers | undefined };
};

/**
 * With a cluster: leader election, then registration (the leader registers before it reports
 * ready, so that admission is on from then), the admission layers' continuity (from here
 * this replica stamps every trusted write it is sent), and the watcher last. One election
 * round comes first, so that a replica that leads from the start acts on its first list;
 * the stored canonical values are loaded before that list, so drift made while spec-guard
 * was down is reverted at start. Returns the leader election identity.
 */
async function addClusterParts(parts: Lifecycle, d: ClusterDeps): Promise<string> {
  const { o, kube, policy, store, metrics, logger, registrar } = d;
  const snapshot = await store.load();
  let servingSince: { since: string; sinceTime: number } | undefined;
  const elector = new LeaderElector(kube, { namespace: o.namespace, name: SPEC_GUARD, leaseDurationSeconds: o.leaseDurationSeconds, identity: o.identity }, logger, (leading) => parts.setLeading(leading));
  const continuity = new ContinuityMonitor(
    { kube, policy, namespace: o.namespace, serving: () => servingSince, save: (record) => store.saveContinuity(record), logger, metrics, onEstablished: () => watcher.onLayersEstablished() },
    snapshot.continuity,
  );
  d.layers.current = () => continuity.lastVerified();
  const events = new EventRecorder(kube, o.identity ?? SPEC_GUARD, (err) => logger.warn('event not recorded', { error: err.message }));
  const watcher: Watcher = new Watcher({
    ...d,
    events,
    verifyLayers: continuity.verify,
    layersIfGuardBroken: () => (continuity.guardKnownBroken() ? continuity.lastVerified() : undefined),
  });
  const warnOnFailure = (what: string) => (err: Error) => logger.error(what, { error: err.message });
  const leaderGauge: Component = { name: 'leader gauge', setLeading: (leading) => metrics.leader.set(leading ? 1 : 0) };
  parts.add(
    leaderGauge,
    { name: 'leader election', start: () => elector.start(), stop: () => elector.stop() },
    registrar && { name: 'registration queue', stop: () => registrar.stop() },
    registrar && { name: 'registration', leaderOnly: true, start: () => registrar.setActive(true), stop: () => registrar.setActive(false) },
    {
      name: 'admission layers continuity',
      start: async () => {
        await checkTrustedIdentities(kube, policy.config.trust.users, logger, metrics);
        servingSince = await currentRevision(kube);
        continuity.start();
        // Admission asks for the layers from the first review on (a follower included).
        await continuity.verify().catch(warnOnFailure('verifying the admission layers failed'));
      },
      stop: () => continuity.stop(),
      setLeading: (leading) => void continuity.setLeading(leading).catch(warnOnFailure('storing the admission layers’ continuity failed')),
    },
    { name: 'watcher', start: () => watcher.start(snapshot), stop: () => watcher.stop(), setLeading: (leading) => watcher.onLeadershipChange(leading) },
  );
  return elector.identity;
}
