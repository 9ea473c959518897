import { z } from 'zod';

/**
 * The AdmissionReview envelope, as far as spec-guard reads it: every field the decision,
 * the tombstones, the metrics and the logs use is checked here, so that a malformed or
 * hostile body gets a 400 naming the field, never a 500. The schema only checks: the
 * request spec-guard reads is the body's own (review.ts), so the objects are not copied
 * member by member (zod's loose objects did, a tenth of a review's CPU beyond parsing it)
 * and their other members (spec, status) reach the decision as the apiserver sent them.
 * Lengths follow the apiserver's own limits, so no field can grow the state it reaches.
 * managedFields are not checked: nothing reads them (they are no evidence of who wrote), and
 * checking them was a sixth of the CPU a review costs beyond parsing it.
 */
const stringMap = z.record(z.string().max(63 * 1024), z.string().max(256 * 1024));

const kubeObject = z.object({
  apiVersion: z.string().max(256).optional(),
  kind: z.string().max(256).optional(),
  metadata: z
    .object({
      name: z.string().max(253).optional(),
      generateName: z.string().max(253).optional(),
      namespace: z.string().max(63).optional(),
      uid: z.string().max(128).optional(),
      resourceVersion: z.string().max(128).optional(),
      labels: stringMap.nullish(),
      annotations: stringMap.nullish(),
      deletionTimestamp: z.string().max(64).nullish(),
    })
    .optional(),
});

export const admissionRequestSchema = z.object({
  uid: z.string().min(1, 'is missing').max(128),
  kind: z.object({ group: z.string().max(253), version: z.string().max(64), kind: z.string().min(1).max(256) }),
  resource: z.object({ group: z.string().max(253), version: z.string().max(64), resource: z.string().min(1).max(256) }),
  subResource: z.string().max(256).optional(),
  name: z.string().max(253).optional(),
  namespace: z.string().max(63).optional(),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  userInfo: z.object({
    username: z.string().max(1024).optional(),
    uid: z.string().max(256).optional(),
    groups: z.array(z.string().max(1024)).max(1024).optional(),
  }),
  object: kubeObject.nullish(),
  oldObject: kubeObject.nullish(),
  dryRun: z.boolean().optional(),
});

export const admissionReviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1', { error: 'expected apiVersion admission.k8s.io/v1' }),
  kind: z.literal('AdmissionReview', { error: 'expected kind AdmissionReview' }),
  request: admissionRequestSchema,
});
