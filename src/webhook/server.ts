import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { AdmissionRequest } from '../kube/index.js';
import type { DecisionContext, Webhook } from '../guard/index.js';
import { reviewResponse } from './review.js';
import { HttpError } from './body.js';
import { AdmissionBudget } from './admission-budget.js';
import { authenticate, decideReview, observeDecision, readReview, withTombstone, type ClientAuthentication } from './pipeline.js';

export { MAX_BODY_BYTES, type ClientAuthentication } from './pipeline.js';

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

const ADMISSION_PATHS: Record<string, Webhook> = { '/mutate': 'mutate', '/validate': 'validate' };

/**
 * The admission endpoints as a plain request handler: the hot path runs without a
 * framework (express's routing and request decoration cost about a tenth of the CPU of a
 * review). Returns false for any other request, which the express app then serves.
 * A review goes through the steps of pipeline.ts: authenticated, read, decided, tombstone
 * recorded (a trusted delete), answered, observed (metrics and log).
 */
function admissionHandler(options: WebhookServerOptions) {
  const { metrics, logger } = options;
  const budget = new AdmissionBudget();

  const admit = async (webhook: Webhook, req: IncomingMessage, res: ServerResponse) => {
    const arrivedAt = Date.now();
    const timer = metrics.timeReview(webhook);
    authenticate(req.socket as TLSSocket, options.clientAuth?.());
    const request = await readReview(req, budget, arrivedAt);
    const context = options.decisionContext();
    const decided = await decideReview(request, webhook, context, options.knowNamespace);
    const decision = await withTombstone(request, decided, options.recordTombstone, logger);
    sendJson(res, 200, reviewResponse(request.uid, decision));
    timer();
    observeDecision(metrics, logger, webhook, request, decision, context);
  };

  /** A step's refusal (HttpError) answered as such; anything else a logged 500. */
  const fail = (req: IncomingMessage, res: ServerResponse, err: Error) => {
    const code = err instanceof HttpError ? err.status : 500;
    metrics.admissionErrors.inc({ code: String(code) });
    if (code === 401) req.resume(); // its body is never read
    if (code === 500) logger.error('admission handler failed', { error: err.stack ?? String(err) });
    if (!res.headersSent) sendError(res, code, code === 500 ? 'internal error' : err.message);
  };

  return (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'POST') return false;
    const query = req.url!.indexOf('?');
    const webhook = ADMISSION_PATHS[query === -1 ? req.url! : req.url!.slice(0, query)];
    if (!webhook) return false;
    admit(webhook, req, res).catch((err: Error) => fail(req, res, err));
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

export function createWebhookServer(options: WebhookServerOptions): https.Server {
  const admission = admissionHandler(options);
  const app = createWebhookApp(options);
  // The certificate is asked for but not required by the handshake: kubelet probes of the
  // health endpoints come without one; the admission endpoints check it themselves.
  const clientAuth = options.clientAuth ? { ca: options.clientAuth().ca, requestCert: true, rejectUnauthorized: false } : {};
  const server = https.createServer({ key: options.tls.key, cert: options.tls.cert, ...clientAuth }, (req, res) => {
    if (!admission(req, res)) app(req, res);
  });
  // A connection's client certificate is checked once (pipeline.ts): it may not change later.
  if (options.clientAuth) server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation());
  server.keepAliveTimeout = 65_000;
  return server;
}
