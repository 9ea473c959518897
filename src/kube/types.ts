import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';

/** The parts of admission.k8s.io/v1 AdmissionReview that spec-guard reads and writes (kubernetes-types has no admission.k8s.io: it is not a served API). */

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/**
 * Any Kubernetes object as JSON on the wire. The metadata type comes from kubernetes-types
 * (generated from the OpenAPI spec, times as strings as they are on the wire); client-node's
 * models describe its own deserialized objects (times as Date) and so do not fit raw JSON.
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: GroupVersionResource;
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo: { username?: string; uid?: string; groups?: string[] };
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
}

export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason: string; message: string };
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}
