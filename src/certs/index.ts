export { createCA, createServingCert, type KeyPair } from './generate.js';
export { caVerdict, servingVerdict, pairProblem, isSignedBy, expiryOf, type CertVerdict } from './inspect.js';
export { splitPem, joinPem, trustedBundle, bundleCarries, fingerprintOf } from './bundle.js';
export { TLS_SECRET, CA_SECRET, ROTATE_REQUESTED, ROTATED_FOR, CA_BUNDLE_KEY, requestRotation, pairOf, type ServingMaterial } from './tls-secret.js';
export { CertificateManager, type CaBundleTarget, type CertificateManagerOptions } from './manager.js';
export { TlsFileSource, type TlsFiles } from './file-source.js';
