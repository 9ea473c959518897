export { parseReview, reviewResponse, BadReviewError } from './review.js';
export { createWebhookServer, MAX_BODY_BYTES, type WebhookServerOptions, type ClientAuthentication } from './server.js';
