import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/index.js';
import { createCA, createServingCert } from '../../src/certs/index.js';

// The client keeps connections alive; a body the server cannot frame would be read as the
// start of the next request on the same connection (Go's server answers "400 Bad Request").
describe('KubeClient request bodies', () => {
  let server: http.Server;
  let kube: KubeClient;
  const seen: Array<{ method: string; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method!, body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    kube = await KubeClient.fromKubeConfig(kc);
  });

  afterAll(() => {
    kube?.close();
    server.close();
  });

  it('a DELETE with DeleteOptions is framed, so the next request on the connection is read as sent', async () => {
    const options = { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Foreground' };
    await kube.request('DELETE', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/p', { body: options });
    await kube.request('POST', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects', { body: { kind: 'AppProject' } });
    expect(seen).toEqual([
      { method: 'DELETE', body: JSON.stringify(options) },
      { method: 'POST', body: '{"kind":"AppProject"}' },
    ]);
  });
});

// A configuration guarding many namespaces holds one watch per namespace and resource, each
// on a connection of its own for as long as it runs. Taken from the calls' pool, enough of
// them leave no connection for a call: no revert, no lease renewal, ever.
describe('KubeClient connections', () => {
  const WATCHES = 40;
  let server: https.Server;
  let kube: KubeClient;
  const watching = new Set<http.ServerResponse>();

  beforeAll(async () => {
    const ca = createCA();
    const serving = createServingCert(ca, ['127.0.0.1']);
    server = https.createServer({ cert: serving.cert, key: serving.key, keepAliveTimeout: 5_000 }, (req, res) => {
      if (req.url?.includes('watch=1')) {
        // A watch with nothing to report: the apiserver keeps it open for minutes.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('');
        watching.add(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"Lease"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caData: Buffer.from(ca.cert).toString('base64') }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    kube = await KubeClient.fromKubeConfig(kc);
  });

  afterAll(() => {
    kube?.close();
    for (const res of watching) res.destroy();
    server.closeAllConnections();
    server.close();
  });

  it(`${WATCHES} open watches leave calls their connections`, async () => {
    const abort = new AbortController();
    for (let i = 0; i < WATCHES; i++) void kube.stream(`/api/v1/namespaces/ns-${i}/secrets`, { watch: '1' }, () => undefined, abort.signal).catch(() => undefined);
    for (let waited = 0; watching.size < WATCHES && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    expect(watching.size).toBe(WATCHES);
    const call = kube.request('GET', '/apis/coordination.k8s.io/v1/namespaces/spec-guard/leases/spec-guard');
    const timeout = new Promise((resolve) => setTimeout(() => resolve('no connection for the call'), 3_000).unref());
    await expect(Promise.race([call, timeout])).resolves.toEqual({ kind: 'Lease' });
    abort.abort();
  });
});
