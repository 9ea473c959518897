import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCA, createServingCert } from '../../src/certs/index.js';
import { createLogger } from '../../src/log/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { createWebhookServer } from '../../src/webhook/index.js';
import { type AdmissionRequest } from '../../src/kube/index.js';
import { context, type TestContext } from './admission.js';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

export interface RunningServer {
  port: number;
  ca: string;
  t: TestContext;
  metrics: Metrics;
  /** Requests whose tombstone was recorded. */
  tombstones: AdmissionRequest[];
  /** Makes the next tombstone write fail. */
  failTombstones: boolean;
  request(method: string, path: string, body?: string | Buffer, headers?: Record<string, string>): Promise<Reply>;
  close(): Promise<void>;
}

/** The real webhook server over TLS on an ephemeral port. */
export async function startServer(rule?: string): Promise<RunningServer> {
  const ca = createCA();
  const tls = createServingCert(ca, ['localhost', '127.0.0.1']);
  const t = context(rule);
  const metrics = new Metrics(false);
  const tombstones: AdmissionRequest[] = [];
  const server = createWebhookServer({
    tls,
    decisionContext: () => t.ctx,
    metrics,
    logger: createLogger('error', () => {}),
    recordTombstone: async (req) => {
      if (running.failTombstones) throw new Error('store unavailable');
      tombstones.push(req);
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const agent = new https.Agent({ ca: ca.cert, keepAlive: true });
  const running: RunningServer = {
    port,
    ca: ca.cert,
    t,
    metrics,
    tombstones,
    failTombstones: false,
    request: (method, path, body, headers = {}) =>
      new Promise((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, method, path, agent, headers: { 'content-type': 'application/json', ...headers } });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode!, headers: res.headers, body: text, json: () => JSON.parse(text) });
          });
        });
        if (body !== undefined) req.write(body);
        req.end();
      }),
    close: () =>
      new Promise((r) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  return running;
}
