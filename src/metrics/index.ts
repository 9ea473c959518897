export { Metrics } from './metrics.js';
export { createMetricsServer } from './server.js';
