import type { AdmissionRequest, AdmissionResponse, AdmissionReview } from '../kube/index.js';
import type { Decision } from '../guard/index.js';
import { admissionReviewSchema } from './review-schema.js';

/** A request body that is not an AdmissionReview spec-guard can answer. */
export class BadReviewError extends Error {}

/** Checks an AdmissionReview v1 body against the envelope schema and returns its request. */
export function parseReview(body: unknown): AdmissionRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadReviewError('body must be a JSON object (an admission.k8s.io/v1 AdmissionReview)');
  }
  const parsed = admissionReviewSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`);
    throw new BadReviewError(`not an AdmissionReview spec-guard can answer: ${issues.join('; ')}`);
  }
  // The body's own request, not zod's output: zod's copy (strip mode) holds only the members
  // the schema checks, not the spec the decision compares. Those members are the same values
  // in both; the others pass unchecked, as they did through loose objects.
  return (body as { request: AdmissionRequest }).request;
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
