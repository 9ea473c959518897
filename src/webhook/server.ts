import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { AdmissionRequest } from '../kube/index.js';
import { decide, resourceName, type DecisionContext } from '../guard/index.js';
import type { Decision, Webhook } from '../guard/index.js';
import { BadReviewError, parseReview, reviewResponse } from './review.js';
import { HttpError, readJsonBody } from './body.js';
import { AdmissionBudget } from './admission-budget.js';

/** Largest AdmissionReview body accepted (3 MiB, the apiserver's own request limit). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Who may post reviews: the holder of a client certificate `ca` signed, named in `allowedNames` (any name when empty). */
export interface ClientAuthentication {
  ca: string;
  allowedNames: readonly string[];
}

export interface WebhookServerOptions {
  tls: { key: string | Buffer; cert: string | Buffer };
  /**
   * When set, a review is answered only over a connection whose client certificate the CA
   * signed, with an allowed common name (the apiserver's, from its admission kubeconfig):
   * nothing posted by another pod that reaches the port is read. Health endpoints need no
   * certificate. Read per review: a rotated CA or new names apply at once.
   */
  clientAuth?: () => ClientAuthentication;
  decisionContext: () => DecisionContext;
  metrics: Metrics;
  logger: Logger;
  /**
   * Records a trusted delete durably before it is admitted (never for dryRun). A failure
   * refuses the delete: admitting it without a tombstone would get the object recreated.
   */
  recordTombstone?: (req: AdmissionRequest) => Promise<void>;
  /**
   * Makes the labels of a request's namespace known before the decision reads them (rules
   * that select namespaces by label): a namespace created a moment ago is read.
   */
  knowNamespace?: (namespace: string) => Promise<void>;
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function sendError(res: ServerResponse, code: number, message: string): void {
  sendJson(res, code, { error: message });
}

/** The connection's client certificate was signed by the CA and carries an allowed common name. */
function fromApiserver(socket: TLSSocket, auth: ClientAuthentication): boolean {
  if (!socket.authorized) return false;
  if (!auth.allowedNames.length) return true;
  const cn = socket.getPeerCertificate().subject?.CN;
  return typeof cn === 'string' && auth.allowedNames.includes(cn);
}

const ADMISSION_PATHS: Record<string, Webhook> = { '/mutate': 'mutate', '/validate': 'validate' };

/**
 * The admission endpoints as a plain request handler: the hot path runs without a
 * framework (express's routing and request decoration cost about a tenth of the CPU of a
 * review). Returns false for any other request, which the express app then serves.
 * A review goes through: admitted (client certificate), read, decided, tombstone recorded
 * (a trusted delete), answered, observed (metrics and log).
 */
function admissionHandler(options: WebhookServerOptions) {
  const { metrics, logger } = options;
  const budget = new AdmissionBudget();

  /** The review's request, or an answered error. */
  const read = async (req: IncomingMessage, res: ServerResponse, arrivedAt: number): Promise<AdmissionRequest | undefined> => {
    if (options.clientAuth && !fromApiserver(req.socket as TLSSocket, options.clientAuth())) {
      metrics.admissionErrors.inc({ code: '401' });
      req.resume();
      sendError(res, 401, 'admission reviews are accepted from the apiserver only: present a client certificate signed by the configured client CA, with an allowed name');
      return undefined;
    }
    try {
      const request = parseReview(await readJsonBody(req, MAX_BODY_BYTES, budget));
      budget.checkDeadline(arrivedAt);
      return request;
    } catch (err) {
      const code = err instanceof HttpError ? err.status : err instanceof BadReviewError ? 400 : 500;
      metrics.admissionErrors.inc({ code: String(code) });
      if (code === 500) logger.error('admission handler failed', { error: (err as Error).stack ?? String(err) });
      sendError(res, code, code === 500 ? 'internal error' : (err as Error).message);
      return undefined;
    }
  };

  /** The decision, with the labels of a namespace seen for the first time read beforehand. */
  const decideRequest = async (request: AdmissionRequest, webhook: Webhook): Promise<{ decision: Decision; context: DecisionContext }> => {
    const context = options.decisionContext();
    if (request.namespace && options.knowNamespace && context.policy.readsNamespaceLabels && !context.namespaceLabels?.(request.namespace)) {
      await options.knowNamespace(request.namespace);
    }
    return { decision: decide(request, webhook, context), context };
  };

  /** A trusted delete is admitted only once its tombstone is stored: else it is refused. */
  const withTombstone = async (request: AdmissionRequest, decision: Decision): Promise<Decision> => {
    if (decision.kind !== 'allow' || !decision.tombstone || request.dryRun || !options.recordTombstone) return decision;
    try {
      await options.recordTombstone(request);
      return decision;
    } catch (err) {
      logger.error('could not record the tombstone of a trusted delete; refusing it', { uid: request.uid, error: (err as Error).message });
      return {
        kind: 'deny',
        changed: [],
        message: `spec-guard could not record this delete (${(err as Error).message}); retry it. A delete spec-guard does not know of would be undone.`,
      };
    }
  };

  const observe = (webhook: Webhook, request: AdmissionRequest, decision: Decision, context: DecisionContext) => {
    const resource = context.policy.resourceLabel(request.resource.group, request.resource.resource);
    metrics.admissionRequests.inc({ webhook, operation: request.operation, resource, decision: decision.kind === 'deny' ? 'deny' : decision.reason });
    if (decision.kind === 'deny' || decision.reason === 'rewritten' || decision.reason === 'warned') {
      metrics.driftDetected.inc({ source: 'admission', resource });
    }
    logDecision(logger, webhook, request, decision);
  };

  const admit = async (webhook: Webhook, req: IncomingMessage, res: ServerResponse) => {
    const arrivedAt = Date.now();
    const timer = metrics.admissionLatency.startTimer({ webhook });
    const request = await read(req, res, arrivedAt);
    if (!request) return;
    const decided = await decideRequest(request, webhook);
    const decision = await withTombstone(request, decided.decision);
    sendJson(res, 200, reviewResponse(request.uid, decision));
    timer();
    observe(webhook, request, decision, decided.context);
  };
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'POST') return false;
    const query = req.url!.indexOf('?');
    const webhook = ADMISSION_PATHS[query === -1 ? req.url! : req.url!.slice(0, query)];
    if (!webhook) return false;
    admit(webhook, req, res).catch((err: Error) => {
      metrics.admissionErrors.inc({ code: '500' });
      logger.error('admission handler failed', { error: err.stack ?? String(err) });
      if (!res.headersSent) sendError(res, 500, 'internal error');
    });
    return true;
  };
}

/**
 * Everything but the admission endpoints: clear 404/405 answers. Health and readiness are
 * served once, on the metrics port, where the probes look; the webhook port answers reviews only.
 */
function createWebhookApp(options: WebhookServerOptions): express.Express {
  const { metrics, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const knownPaths: Record<string, string> = { '/mutate': 'POST', '/validate': 'POST' };
  app.use((req, res) => {
    const allowed = knownPaths[req.path];
    if (allowed) {
      res.set('allow', allowed);
      sendError(res, 405, `${req.method} is not allowed on ${req.path}; use ${allowed}`);
    } else {
      sendError(res, 404, `no such path: ${req.path}`);
    }
  });
  // Anything unexpected: a JSON error, never a crash.
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    metrics.admissionErrors.inc({ code: '500' });
    logger.error('request handler failed', { error: err.stack ?? String(err) });
    sendError(res, 500, 'internal error');
  });
  return app;
}

function logDecision(logger: Logger, webhook: Webhook, req: AdmissionRequest, decision: Decision): void {
  const important = decision.kind === 'deny' || decision.reason === 'rewritten' || decision.reason === 'warned' || decision.reason === 'break-glass';
  if (!important && !logger.enabled('debug')) return;
  const fields = {
    uid: req.uid,
    webhook,
    operation: req.operation,
    user: req.userInfo.username,
    object: `${resourceName(req.resource.group, req.resource.resource)} ${req.namespace ?? ''}/${req.name ?? ''}`,
    decision: decision.kind === 'deny' ? 'deny' : decision.reason,
    changed: decision.kind === 'deny' ? decision.changed : undefined,
    dryRun: req.dryRun || undefined,
  };
  if (decision.kind === 'allow' && decision.reason === 'break-glass') logger.warn('admission decision: break glass', fields);
  else if (important) logger.info('admission decision', fields);
  else logger.debug('admission decision', fields);
}

export function createWebhookServer(options: WebhookServerOptions): https.Server {
  const admission = admissionHandler(options);
  const app = createWebhookApp(options);
  // The certificate is asked for but not required by the handshake: kubelet probes of the
  // health endpoints come without one; the admission endpoints check it themselves.
  const clientAuth = options.clientAuth ? { ca: options.clientAuth().ca, requestCert: true, rejectUnauthorized: false } : {};
  const server = https.createServer({ key: options.tls.key, cert: options.tls.cert, ...clientAuth }, (req, res) => {
    if (!admission(req, res)) app(req, res);
  });
  server.keepAliveTimeout = 65_000;
  return server;
}
