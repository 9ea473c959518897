import { readFileSync } from 'node:fs';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../test/fixtures/admission/${name}.json`, import.meta.url), 'utf8'));

/** Helm parameters that grow an Application's JSON to about `bytes`. */
function parametersFor(object: Record<string, any>, bytes: number): Array<{ name: string; value: string }> {
  const parameters: Array<{ name: string; value: string }> = [];
  const grown = { ...object, spec: { ...object.spec, source: { ...object.spec.source, helm: { parameters } } } };
  for (let i = 0; JSON.stringify(grown).length < bytes; i++) {
    parameters.push({ name: `service.replicas.component${i}`, value: `value-${i}-${'x'.repeat(24)}` });
  }
  return parameters;
}

/** `value` with every object's keys sorted, as the apiserver writes objects (Go's encoding/json). */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(Object.keys(object).sort().map((k) => [k, sortKeys(object[k])]));
}

/**
 * AdmissionReview bodies with ~`bytes`-long Applications, from the real captures:
 * an untrusted spec change (denied, with the changed pointers worked out) and a trusted
 * update (stamped).
 */
export function workload(bytes: number) {
  const untrusted = fixture('alice-update-spec');
  // The same parameters on both sides: alice changes one field (targetRevision) of a large spec.
  const parameters = parametersFor(untrusted.request.object, bytes);
  untrusted.request.object.spec.source.helm = { parameters };
  untrusted.request.oldObject.spec.source.helm = { parameters: structuredClone(parameters) };
  // The apiserver writes objects with sorted map keys (Go's encoding/json): so do we.
  untrusted.request.object = sortKeys(untrusted.request.object);
  untrusted.request.oldObject = sortKeys(untrusted.request.oldObject);
  const trusted = structuredClone(untrusted);
  trusted.request.userInfo = { username: 'system:serviceaccount:argocd:argocd-agent-agent', groups: ['system:authenticated'] };
  return {
    objectBytes: JSON.stringify(untrusted.request.object).length,
    untrustedUpdate: JSON.stringify(untrusted),
    trustedUpdate: JSON.stringify(trusted),
  };
}

export const benchConfig = `trust:
  users: [system:serviceaccount:argocd:argocd-agent-agent]
resources:
  - group: argoproj.io
    resource: applications
    mode: enforce
    normalizer: argocd-application
store:
  type: memory
`;

/** The configuration bench/revert and bench/revert-own run the reverting spec-guard with. */
export const benchReverterConfig = `resources:
  - group: argoproj.io
    resource: applications
    namespaces: [argocd]
    normalizer: argocd-application
store:
  type: memory
`;
