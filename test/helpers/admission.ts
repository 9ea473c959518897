import { readFileSync } from 'node:fs';
import jsonpatch from 'fast-json-patch';
import { parseConfig } from '../../src/config/index.js';
import { CanonicalCache } from '../../src/sync/index.js';
import { objectKey, Policy, STAMP_ANNOTATION, Stamper } from '../../src/guard/index.js';
import type { AdmissionRequest, AdmissionReview, KubeObject } from '../../src/kube/index.js';
import type { Decision, DecisionContext } from '../../src/guard/index.js';

const fixtures = new URL('../fixtures/admission/', import.meta.url);

export type FixtureName =
  | 'agent-create'
  | 'alice-update-spec'
  | 'controller-update-status'
  | 'alice-update-spec-dryrun'
  | 'alice-delete';

/** A fresh copy of an AdmissionReview captured from a real kube-apiserver. */
export function review(name: FixtureName): AdmissionReview & { request: AdmissionRequest } {
  return JSON.parse(readFileSync(new URL(`${name}.json`, fixtures), 'utf8'));
}

export const AGENT = 'system:serviceaccount:argocd:argocd-agent-agent';
export const SELF = 'system:serviceaccount:spec-guard:spec-guard';

export function configYaml(rule: string): string {
  return `trust:\n  users: [${AGENT}]\n  groups: [argocd-agents]\nresources:\n  - group: argoproj.io\n    resource: applications\n${rule
    .split('\n')
    .filter(Boolean)
    .map((l) => `    ${l}`)
    .join('\n')}\n`;
}

export interface TestContext {
  ctx: DecisionContext;
  policy: Policy;
  stamper: Stamper;
  cache: CanonicalCache;
}

export function context(rule = 'mode: enforce\nnormalizer: argocd-application'): TestContext {
  const policy = new Policy(parseConfig(configYaml(rule), 'test.yaml'), SELF);
  const stamper = new Stamper(Buffer.alloc(32, 7));
  const cache = new CanonicalCache();
  return { ctx: { policy, canonical: cache, stamper, now: Date.now() }, policy, stamper, cache };
}

export const keyOf = (req: AdmissionRequest) =>
  objectKey(req.resource.group, req.resource.resource, req.namespace, req.name ?? '');

/** Gives `object` the stamp a trusted write of its current view would have received a second before the request (or at `seq`). */
export function stamp(t: TestContext, req: AdmissionRequest, object: KubeObject, seq = t.ctx.now - 1000): void {
  const rule = t.policy.match(req.resource.group, req.resource.resource, req.namespace, [object.metadata])!;
  object.metadata!.annotations = {
    ...object.metadata!.annotations,
    [STAMP_ANNOTATION]: t.stamper.stamp(rule.view.of(object).hash, keyOf(req), seq),
  };
}

/** Applies the decision's JSON patch as the apiserver would (RFC 6902, via fast-json-patch). */
export function applyDecision(object: KubeObject, decision: Decision): KubeObject {
  if (decision.kind !== 'allow' || !decision.patch) return object;
  return jsonpatch.applyPatch(structuredClone(object), decision.patch as jsonpatch.Operation[], true).newDocument;
}

export function setTargetRevision(object: KubeObject, revision: string): void {
  ((object.spec as Record<string, unknown>).source as Record<string, unknown>).targetRevision = revision;
}
