import http from 'node:http';
import type { Metrics } from './metrics.js';

/** Plain-HTTP /metrics, /healthz and /readyz, apart from the webhook port. */
export function createMetricsServer(metrics: Metrics, isReady: () => boolean): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    } else if (path === '/readyz') {
      const ready = isReady();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ok' : 'not ready');
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
}
