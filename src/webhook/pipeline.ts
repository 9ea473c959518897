import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { AdmissionRequest } from '../kube/index.js';
import { decide, resourceName, type Decision, type DecisionContext, type Webhook } from '../guard/index.js';
import { BadReviewError, parseReview } from './review.js';
import { HttpError, readJsonBody } from './body.js';
import type { AdmissionBudget } from './admission-budget.js';

/**
 * The steps a review goes through, each a function of its own: authenticate (the client
 * certificate), read, decide, record the tombstone (a trusted delete), answer (the server),
 * observe (metrics and log). A step that ends the review throws an HttpError with its answer.
 */

/** Largest AdmissionReview body accepted (3 MiB, the apiserver's own request limit). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Who may post reviews: the holder of a client certificate `ca` signed, named in `allowedNames` (any name when empty). */
export interface ClientAuthentication {
  ca: string;
  allowedNames: readonly string[];
}

/**
 * The connections whose certificate passed, and under which client authentication. Reading a
 * peer certificate builds it anew (about 95 µs, a third of what the bare server spends on a
 * whole 25 KB review), and it is fixed for a connection's life: the server refuses
 * renegotiation (server.ts). A new CA or new names are a new object: checked again.
 */
const authenticated = new WeakMap<TLSSocket, ClientAuthentication>();

/** Step 1: the connection's client certificate was signed by the CA and carries an allowed common name; else 401. */
export function authenticate(socket: TLSSocket, auth: ClientAuthentication | undefined): void {
  if (!auth || authenticated.get(socket) === auth) return;
  const cn = socket.authorized ? socket.getPeerCertificate().subject?.CN : undefined;
  if (socket.authorized && (!auth.allowedNames.length || (typeof cn === 'string' && auth.allowedNames.includes(cn)))) {
    authenticated.set(socket, auth);
    return;
  }
  throw new HttpError(401, 'admission reviews are accepted from the apiserver only: present a client certificate signed by the configured client CA, with an allowed name');
}

/** Step 2: the review's request, read within the budget and the deadline; 4xx/503 for anything else. */
export async function readReview(req: IncomingMessage, budget: AdmissionBudget, arrivedAt: number): Promise<AdmissionRequest> {
  try {
    const request = parseReview(await readJsonBody(req, MAX_BODY_BYTES, budget));
    budget.checkDeadline(arrivedAt);
    return request;
  } catch (err) {
    if (err instanceof BadReviewError) throw new HttpError(400, err.message);
    throw err;
  }
}

/** Step 3: the decision, with the labels of a namespace seen for the first time read beforehand. */
export async function decideReview(
  request: AdmissionRequest,
  webhook: Webhook,
  context: DecisionContext,
  knowNamespace: ((namespace: string) => Promise<void>) | undefined,
): Promise<Decision> {
  if (request.namespace && knowNamespace && context.policy.readsNamespaceLabels && !context.namespaceLabels?.(request.namespace)) {
    await knowNamespace(request.namespace);
  }
  return decide(request, webhook, context);
}

/** Step 4: a trusted delete is admitted only once its tombstone is stored; else it is refused. */
export async function withTombstone(
  request: AdmissionRequest,
  decision: Decision,
  record: ((req: AdmissionRequest) => Promise<void>) | undefined,
  logger: Logger,
): Promise<Decision> {
  if (decision.kind !== 'allow' || !decision.tombstone || request.dryRun || !record) return decision;
  try {
    await record(request);
    return decision;
  } catch (err) {
    logger.error('could not record the tombstone of a trusted delete; refusing it', { uid: request.uid, error: (err as Error).message });
    return {
      kind: 'deny',
      changed: [],
      message: `spec-guard could not record this delete (${(err as Error).message}); retry it. A delete spec-guard does not know of would be undone.`,
    };
  }
}

/** Step 6: the decision in the metrics, and in the log when it matters. */
export function observeDecision(metrics: Metrics, logger: Logger, webhook: Webhook, request: AdmissionRequest, decision: Decision, context: DecisionContext): void {
  const resource = context.policy.resourceLabel(request.resource.group, request.resource.resource);
  metrics.countReview(webhook, request.operation, resource, decision.kind === 'deny' ? 'deny' : decision.reason);
  if (decision.kind === 'deny' || decision.reason === 'rewritten' || decision.reason === 'warned') {
    metrics.driftDetected.inc({ source: 'admission', resource });
  }
  logDecision(logger, webhook, request, decision);
}

function logDecision(logger: Logger, webhook: Webhook, req: AdmissionRequest, decision: Decision): void {
  const breakGlass = decision.kind === 'allow' && decision.reason === 'break-glass';
  const important = decision.kind === 'deny' || decision.reason === 'rewritten' || decision.reason === 'warned';
  const level = breakGlass ? 'warn' : important ? 'info' : 'debug';
  // The line's fields are built only when it is written (a refusal at level warn is not).
  if (!logger.enabled(level)) return;
  logger[level](breakGlass ? 'admission decision: break glass' : 'admission decision', {
    uid: req.uid,
    webhook,
    operation: req.operation,
    user: req.userInfo.username,
    object: `${resourceName(req.resource.group, req.resource.resource)} ${req.namespace ?? ''}/${req.name ?? ''}`,
    decision: decision.kind === 'deny' ? 'deny' : decision.reason,
    changed: decision.kind === 'deny' ? decision.changed : undefined,
    dryRun: req.dryRun || undefined,
  });
}
