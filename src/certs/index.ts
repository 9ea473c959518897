export { createCA, createServingCert, type KeyPair } from './generate.js';
export { servingCertProblem, expiryOf } from './inspect.js';
export { ensureServingMaterial, TLS_SECRET, CA_SECRET, type ServingMaterial } from './tls-secret.js';
