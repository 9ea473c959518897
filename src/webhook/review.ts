import type { AdmissionRequest, AdmissionResponse, AdmissionReview } from './admission-types.js';
import type { Decision } from './decision.js';

/** A request body that is not an AdmissionReview spec-guard can answer. */
export class BadReviewError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks the shape of an AdmissionReview v1 body and returns its request. */
export function parseReview(body: unknown): AdmissionRequest {
  if (!isObject(body)) throw new BadReviewError('body must be a JSON object (an admission.k8s.io/v1 AdmissionReview)');
  if (body.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview') {
    throw new BadReviewError(
      `expected apiVersion admission.k8s.io/v1 and kind AdmissionReview, got ${String(body.apiVersion)} ${String(body.kind)}`,
    );
  }
  const req = body.request;
  if (!isObject(req)) throw new BadReviewError('request is missing');
  if (typeof req.uid !== 'string' || req.uid === '') throw new BadReviewError('request.uid is missing');
  if (!isObject(req.resource) || typeof req.resource.resource !== 'string' || typeof req.resource.group !== 'string') {
    throw new BadReviewError('request.resource must have group and resource');
  }
  if (!isObject(req.kind) || typeof req.kind.kind !== 'string') throw new BadReviewError('request.kind is missing');
  if (!['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(req.operation as string)) {
    throw new BadReviewError(`request.operation must be CREATE, UPDATE, DELETE or CONNECT, got ${String(req.operation)}`);
  }
  if (!isObject(req.userInfo)) throw new BadReviewError('request.userInfo is missing');
  for (const field of ['object', 'oldObject'] as const) {
    if (req[field] !== undefined && req[field] !== null && !isObject(req[field])) {
      throw new BadReviewError(`request.${field} must be an object`);
    }
  }
  return req as unknown as AdmissionRequest;
}

/** The AdmissionReview answering `uid` with `decision`. */
export function reviewResponse(uid: string, decision: Decision): AdmissionReview {
  let response: AdmissionResponse;
  if (decision.kind === 'deny') {
    response = { uid, allowed: false, status: { code: 403, reason: 'Forbidden', message: decision.message } };
  } else {
    response = { uid, allowed: true };
    if (decision.patch?.length) {
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
    }
    if (decision.warnings?.length) response.warnings = decision.warnings;
  }
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}
