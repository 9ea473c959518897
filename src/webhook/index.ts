export { decide, type DecisionContext } from './decide.js';
export type { Decision, Webhook, AllowReason } from './decision.js';
export type { AdmissionRequest, AdmissionReview, AdmissionResponse, KubeObject } from './admission-types.js';
export { parseReview, reviewResponse, BadReviewError } from './review.js';
export { createWebhookServer, MAX_BODY_BYTES, type WebhookServerOptions } from './server.js';
