export { createCA, createServingCert, type KeyPair } from './generate.js';
