export { KubeClient, KubeError, isNotFound, isConflict, type RequestOptions } from './client.js';
export { readSecret, readOrCreateSecret, decodeSecretData, encodeSecretData, secretPath, type Secret } from './secrets.js';
export { Reflector, type ReflectorHandlers, type ReflectorOptions, type ListedObject } from './reflector.js';
export { EventRecorder, type InvolvedObject } from './events.js';
export { parseJson, isRawNumber, exactNumbersSupported } from './json.js';
export { collectionPath, objectPath, parseObjectKey } from './resource-paths.js';
export { coalesce } from './coalesce.js';
export { KeyedQueue } from './keyed-queue.js';
export type { AdmissionRequest, AdmissionReview, AdmissionResponse, KubeObject, GroupVersionResource, Operation } from './types.js';
