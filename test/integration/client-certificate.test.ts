import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createCA, createServingCert, type KeyPair } from '../../src/certs/index.js';
import { createLogger } from '../../src/log/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { createWebhookServer } from '../../src/webhook/index.js';
import { context, review } from '../helpers/admission.js';
import { createClientCert } from '../helpers/tls.js';

// The webhook checks a connection's client certificate once and trusts the connection after
// that (reading the certificate per review cost ~95 µs). That holds only if the certificate
// cannot change on a live connection: TLS 1.2 renegotiation could present another one, so the
// server refuses it. Real TLS, a real client stack, real AdmissionReview bodies.
const ca = createCA();
const apiserver = createClientCert(ca, 'front-proxy-client');
const stranger = createClientCert(ca, 'someone-else');
const body = JSON.stringify(review('agent-create'));
let server: https.Server;
let port: number;

beforeAll(async () => {
  const auth = { ca: ca.cert, allowedNames: ['front-proxy-client'] };
  server = createWebhookServer({
    tls: createServingCert(ca, ['127.0.0.1']),
    clientAuth: () => auth,
    decisionContext: () => context().ctx,
    metrics: new Metrics(false),
    logger: createLogger('error', () => {}),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => {
  server.closeAllConnections();
  server.close(() => r());
}));

/** POSTs the review over `agent`'s connection; resolves with the status and the socket used. */
function post(agent: https.Agent): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/mutate', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket as TLSSocket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** One kept-alive TLS 1.2 connection (the version that can renegotiate) with `client`'s certificate, or none. */
const connection = (client?: KeyPair) => new https.Agent({ keepAlive: true, maxSockets: 1, ca: ca.cert, maxVersion: 'TLSv1.2', ...(client ?? {}) });

describe('the client certificate, checked once per connection', () => {
  it('the apiserver’s certificate is answered, review after review on one connection; another name or none gets 401', async () => {
    const agent = connection(apiserver);
    const first = await post(agent);
    const second = await post(agent);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.socket).toBe(first.socket);
    agent.destroy();
    for (const client of [stranger, undefined]) {
      const other = connection(client);
      expect((await post(other)).status).toBe(401);
      other.destroy();
    }
  });

  it('a connection that tries to renegotiate (and could present another certificate) is dropped; nothing more is answered on it', async () => {
    const agent = connection(apiserver);
    const { status, socket } = await post(agent);
    expect(status).toBe(200);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
    // Whatever the client stack reports of it (an error, or nothing), the server drops the connection.
    socket.renegotiate({ rejectUnauthorized: false }, () => {});
    await closed;
    expect(socket.destroyed).toBe(true);
    const again = await post(agent);
    expect(again.socket).not.toBe(socket);
    agent.destroy();
  });
});
