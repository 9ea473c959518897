import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/index.js';

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
