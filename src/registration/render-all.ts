import type { Policy } from '../guard/index.js';
import type { AdmissionObjects } from './registrar.js';
import { renderAdmissionPolicy } from './render-policy.js';
import { renderWebhookConfigurations, type RenderOptions } from './render-webhooks.js';

/** Every admission object spec-guard registers for a policy, by kind. */
export function renderAdmissionObjects(policy: Policy, options: RenderOptions): AdmissionObjects {
  const { mutating, validating } = renderWebhookConfigurations(policy, options);
  const layer0 = policy.config.admissionPolicy ? renderAdmissionPolicy(policy, options.excludedNamespaces) : undefined;
  return {
    MutatingWebhookConfiguration: mutating,
    ValidatingWebhookConfiguration: validating,
    ...(layer0 ? { ValidatingAdmissionPolicy: layer0.policy, ValidatingAdmissionPolicyBinding: layer0.binding } : {}),
  };
}
