import { backoffMs, Informer, readSecret, secretPath, WorkQueue, type KubeClient, type ListedObject, type Secret } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import { fingerprintOf, joinPem, splitPem, trustedBundle } from './bundle.js';
import { createCA, createServingCert, type KeyPair } from './generate.js';
import { caVerdict, expiryOf, isSignedBy, pairProblem, servingVerdict } from './inspect.js';
import {
  CA_BUNDLE_KEY,
  CA_SECRET,
  pairOf,
  requestRotation,
  rotationRequest,
  secretText,
  TLS_SECRET,
  writeTlsSecret,
  type ServingMaterial,
} from './tls-secret.js';

export interface CertificateManagerOptions {
  kube: KubeClient;
  namespace: string;
  /** Names and addresses the serving certificate must cover. */
  hosts: string[];
  logger: Logger;
  metrics: Metrics;
  /** How long a new CA must sit in every webhook configuration before serving switches to it. */
  caPropagationMs: number;
  /** How often the leader checks the renewal deadlines. */
  checkIntervalMs?: number;
  /** Called with the material to serve whenever it changes (hot reload). */
  onServing(material: ServingMaterial): void;
  /** Where the trusted CA bundle goes: the webhook configurations. */
  trust: CaBundleTarget;
}

/**
 * The contract between certificates and registration: certificates decide which CAs are
 * trusted; whoever registers the webhook configurations puts them there and says when they
 * carry a CA (which serving waits for before it switches to a certificate that CA signed).
 */
export interface CaBundleTarget {
  /** Puts the trusted CA bundle into the webhook configurations (when this replica registers). */
  publish(caBundle: string): Promise<void>;
  /** True when every registered webhook configuration trusts `caPem`. */
  carries(caPem: string): Promise<boolean>;
}

class Conflict extends Error {}

/**
 * Self-managed TLS kept in two Secrets: the CA (with the bundle of CAs still trusted) and
 * the serving certificate. Every replica creates what is missing, replaces what cannot
 * serve, and hot-reloads the serving certificate from a watch. The leader also renews:
 * the serving certificate with a third of its life left, the CA with a fifth, with
 * overlap: a new CA joins the bundle first, serving switches to it only after every
 * webhook configuration has carried it for `caPropagationMs`, the old CA leaves when it
 * expires.
 */
const TLS_KEY = 'tls';

export class CertificateManager {
  private leading = false;
  private served?: { fingerprint: string; material: ServingMaterial };
  /** The two TLS Secrets, each watched; reconcile reads them from here. */
  private readonly informers = new Map<string, Informer<Secret & ListedObject>>();
  /** Set once init() has reconciled: watch events then reconcile through the queue. */
  private watching = false;
  /** One key: the TLS Secrets, reconciled one run at a time with the one retry policy. */
  private readonly queue: WorkQueue;
  private checkTimer?: NodeJS.Timeout;
  private stopped = false;
  /** When this replica first saw each CA (by fingerprint) in every webhook configuration. */
  private readonly carriedSince = new Map<string, number>();
  private waitingLogged?: string;

  constructor(private readonly o: CertificateManagerOptions) {
    this.queue = new WorkQueue(() => this.reconcile(), {
      metrics: o.metrics.queue('certificates'),
      onError: (_key, err, retryInMs) => {
        if (!(err instanceof Conflict)) this.o.logger.warn('TLS reconcile failed; retrying', { error: (err as Error).message, retryInMs });
      },
    });
  }

  /**
   * Watches both Secrets, then makes sure servable material exists, creating or replacing
   * what is missing or broken. From then on a new serving certificate is hot-reloaded and
   * whatever breaks is repaired.
   */
  async init(): Promise<ServingMaterial> {
    for (const name of [TLS_SECRET, CA_SECRET]) {
      const informer = new Informer<Secret & ListedObject>(
        this.o.kube,
        {
          path: secretPath(this.o.namespace),
          fieldSelector: `metadata.name=${name}`,
          silenceMs: 60_000,
          onRestart: (reason) => this.o.logger.debug('TLS Secret watch restarted', { secret: name, reason }),
        },
        ({ object, type }) => {
          if (!this.watching) return;
          if (name === TLS_SECRET && object && type !== 'DELETED') this.adopt(object);
          this.kick();
        },
      );
      this.informers.set(name, informer);
    }
    await Promise.all([...this.informers.values()].map((informer) => informer.start()));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.reconcile();
        break;
      } catch (err) {
        if (!(err instanceof Conflict) || attempt >= 5) throw err;
        // Another replica wrote first: wait for the watch to show its write.
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt + 1)));
      }
    }
    if (!this.served) throw new Error('no serving certificate after reconciling the TLS Secrets');
    this.watching = true;
    // What changed while init() ran (its own writes included) is reconciled once more.
    this.kick();
    return this.served.material;
  }

  setLeading(leading: boolean): void {
    this.leading = leading;
    clearInterval(this.checkTimer);
    if (!leading || this.stopped) return;
    this.checkTimer = setInterval(() => this.kick(), this.o.checkIntervalMs ?? 60_000);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.checkTimer);
    void this.queue.stop();
    for (const informer of this.informers.values()) informer.stop();
  }

  /** Serves `secret`'s certificate if it is new and servable; a broken one is left to reconcile. */
  private adopt(secret: Secret): void {
    const pair = pairOf(secret);
    if (!pair || pairProblem(pair)) return;
    const fingerprint = fingerprintOf(pair.cert)!;
    if (this.served?.fingerprint === fingerprint) return;
    const material = { ...pair, caBundle: secretText(secret, 'ca.crt') ?? '' };
    const first = !this.served;
    this.served = { fingerprint, material };
    this.o.onServing(material);
    if (!first) this.o.logger.info('serving certificate reloaded', { secret: `${this.o.namespace}/${TLS_SECRET}`, expires: expiryOf(pair.cert).toISOString() });
  }

  /** A TLS Secret as its informer last saw it. */
  private cached(name: string): Secret | undefined {
    return this.informers.get(name)!.get(`${this.o.namespace}/${name}`);
  }

  /** Reconciles now, or once more after the run in progress. */
  private kick(): void {
    if (!this.stopped) this.queue.add(TLS_KEY);
  }

  private async reconcile(): Promise<void> {
    const now = new Date();
    const { ca, known, tlsSecret } = await this.reconcileCa(now);
    this.o.metrics.certificateExpiry.set({ certificate: 'ca' }, expiryOf(ca.cert).getTime() / 1000);
    const bundle = trustedBundle([ca.cert, ...known], now);
    await this.o.trust.publish(joinPem(bundle));
    await this.reconcileServing(tlsSecret, ca, bundle, now);
  }

  /** The CA to sign with, created or rotated as needed, and every CA certificate seen. */
  private async reconcileCa(now: Date): Promise<{ ca: KeyPair; known: string[]; tlsSecret: Secret | undefined }> {
    const { kube, namespace, logger } = this.o;
    const caSecret = this.cached(CA_SECRET);
    let tlsSecret: Secret | undefined = this.cached(TLS_SECRET);
    const ca = pairOf(caSecret);
    const known = [...splitPem(secretText(caSecret, CA_BUNDLE_KEY)), ...splitPem(secretText(tlsSecret, 'ca.crt'))];
    const check = caVerdict(ca, now);
    const request = rotationRequest(caSecret);
    const reason = check.unusable ?? (this.leading ? (check.renew ?? (request && `rotation requested (${request})`)) : undefined);
    if (!reason && ca) return { ca, known, tlsSecret };

    const next = createCA();
    const bundle = trustedBundle([next.cert, ...(ca && !check.unusable ? [ca.cert] : []), ...known], now);
    if (!(await writeTlsSecret(kube, namespace, CA_SECRET, caSecret, { 'tls.crt': next.cert, 'tls.key': next.key, [CA_BUNDLE_KEY]: joinPem(bundle) }))) {
      throw new Conflict();
    }
    logger[caSecret && check.unusable ? 'warn' : 'info'](caSecret ? 'new CA issued; serving switches to it once every webhook configuration trusts it' : 'CA created', {
      secret: `${namespace}/${CA_SECRET}`,
      reason: caSecret ? reason : 'missing',
      expires: expiryOf(next.cert).toISOString(),
    });
    if (caSecret) this.o.metrics.certificateRotations.inc({ certificate: 'ca' });
    // The serving certificate follows; `spec-guard rotate --ca` waits for that step.
    if (request && tlsSecret) {
      await requestRotation(kube, namespace, TLS_SECRET, request);
      // Just written: read it back rather than wait for the watch to show it.
      tlsSecret = await readSecret(kube, namespace, TLS_SECRET);
    }
    return { ca: next, known: bundle, tlsSecret };
  }

  /** Issues a serving certificate when the current one cannot serve or is due (leader). */
  private async reconcileServing(tlsSecret: Secret | undefined, ca: KeyPair, bundle: string[], now: Date): Promise<void> {
    const { kube, namespace, logger } = this.o;
    const serving = pairOf(tlsSecret);
    const check = servingVerdict(serving, bundle, ca.cert, this.o.hosts, now);
    const request = rotationRequest(tlsSecret);
    const reason = !tlsSecret ? 'missing' : (check.unusable ?? (this.leading ? (check.renew ?? (request && `rotation requested (${request})`)) : undefined));
    if (!reason) {
      if (this.leading && secretText(tlsSecret, 'ca.crt') !== joinPem(bundle)) {
        // Keep ca.crt current for whoever registers the webhooks from it (GitOps installs).
        if (!(await writeTlsSecret(kube, namespace, TLS_SECRET, tlsSecret, { 'tls.crt': serving!.cert, 'tls.key': serving!.key, 'ca.crt': joinPem(bundle) }))) {
          throw new Conflict();
        }
      }
      if (tlsSecret) this.adopt(tlsSecret);
      return;
    }
    if (serving && !check.unusable && !isSignedBy(serving.cert, ca.cert)) {
      // A working certificate is replaced only by one the apiserver already trusts.
      const waitMs = await this.trustWait(ca.cert, now.getTime());
      if (waitMs > 0) {
        if (tlsSecret) this.adopt(tlsSecret);
        this.queue.addAfter(TLS_KEY, waitMs);
        return;
      }
    }
    const next = createServingCert(ca, this.o.hosts);
    const written = await writeTlsSecret(kube, namespace, TLS_SECRET, tlsSecret, { 'tls.crt': next.cert, 'tls.key': next.key, 'ca.crt': joinPem(bundle) });
    if (!written) throw new Conflict();
    logger[check.unusable && tlsSecret ? 'warn' : 'info']('serving certificate issued', {
      secret: `${namespace}/${TLS_SECRET}`,
      reason,
      expires: expiryOf(next.cert).toISOString(),
    });
    if (tlsSecret) this.o.metrics.certificateRotations.inc({ certificate: 'serving' });
    this.adopt(written);
  }

  /** Milliseconds still to wait before serving a certificate signed by `caPem`. */
  private async trustWait(caPem: string, now: number): Promise<number> {
    const fingerprint = fingerprintOf(caPem)!;
    if (!(await this.o.trust.carries(caPem))) {
      this.carriedSince.delete(fingerprint);
      if (this.waitingLogged !== fingerprint) {
        this.waitingLogged = fingerprint;
        this.o.logger.info('waiting for every webhook configuration to trust the new CA before serving with it');
      }
      return 1000;
    }
    const since = this.carriedSince.get(fingerprint) ?? now;
    this.carriedSince.set(fingerprint, since);
    return Math.max(0, since + this.o.caPropagationMs - now);
  }
}
