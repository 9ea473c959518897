export { renderAdmissionObjects } from './render-all.js';
export { renderWebhookConfigurations, policyHolds, type RenderOptions, type WebhookEndpoint, type WebhookConfigurations } from './render-webhooks.js';
export { renderAdmissionPolicy, policyCovers, type AdmissionPolicyObjects } from './render-policy.js';
export { ADMISSION_COLLECTIONS, ADMISSION_OBJECT_NAME, MANAGED_BY_LABEL, admissionResource, type AdmissionKind } from './shared.js';
export { WebhookRegistrar, covers, unregisteredTarget, type AdmissionObjects } from './registrar.js';
export { ContinuityMonitor, currentRevision, layerKinds, IN_FORCE_MS, type LayerKinds } from './continuity.js';
export { renderRbac, type RbacOptions } from './render-rbac.js';
