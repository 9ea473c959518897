/** The parts of admission.k8s.io/v1 AdmissionReview that spec-guard reads and writes. */

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
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
