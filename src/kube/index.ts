export { KubeClient, KubeError, isNotFound, isConflict, type RequestOptions } from './client.js';
