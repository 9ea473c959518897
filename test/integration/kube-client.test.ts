import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/index.js';
import { CALLS_IN_FLIGHT, METADATA_ONLY, REQUEST_SOCKETS } from '../../src/kube/client.js';
import { createCA, createServingCert } from '../../src/certs/index.js';
import { plainHttpClient } from '../helpers/kube-client.js';

/**
 * A local plain-HTTP server answering with `handler`, and a client of it under `path`, for the
 * tests of the enclosing describe: started before them, closed after.
 */
function plainApiserver(handler: http.RequestListener, path = ''): { readonly kube: KubeClient } {
  let server: http.Server | undefined;
  let kube: KubeClient | undefined;
  beforeAll(async () => {
    server = http.createServer({ keepAliveTimeout: 5_000 }, handler);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    kube = await plainHttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
  });
  afterAll(() => {
    kube?.close();
    server?.close();
  });
  return {
    get kube() {
      return kube!;
    },
  };
}

/** Resolves once `done()` holds, or after `limitMs` (the assertions that follow say which). */
async function until(done: () => boolean, limitMs = 2000): Promise<void> {
  for (let waited = 0; !done() && waited < limitMs; waited += 5) await new Promise((r) => setTimeout(r, 5));
}

/** A client with a bearer token of the local HTTPS `server`, whose certificate `caPem` signed. */
function tokenClient(server: https.Server, caPem: string): Promise<KubeClient> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caData: Buffer.from(caPem).toString('base64') }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return KubeClient.fromKubeConfig(kc);
}

// The client keeps connections alive; a body the server cannot frame would be read as the
// start of the next request on the same connection (Go's server answers "400 Bad Request").
describe('KubeClient request bodies', () => {
  const seen: Array<{ method: string; body: string }> = [];

  const api = plainApiserver((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  it('a DELETE with DeleteOptions is framed, so the next request on the connection is read as sent', async () => {
    const options = { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Foreground' };
    await api.kube.request('DELETE', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/p', { body: options });
    await api.kube.request('POST', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects', { body: { kind: 'AppProject' } });
    expect(seen).toEqual([
      { method: 'DELETE', body: JSON.stringify(options) },
      { method: 'POST', body: '{"kind":"AppProject"}' },
    ]);
  });
});

// A revert's PATCH and an Event's write are answered with the whole object, which nobody
// reads: they ask for its metadata alone (the apiserver encodes and sends a sixth of it or
// less), falling back to the whole object where the server cannot transform; a call whose
// answer is read asks for the object.
describe('KubeClient answers it discards', () => {
  const accepted: string[] = [];

  const api = plainApiserver((req, res) => {
    accepted.push(req.headers.accept ?? '');
    req.resume();
    if (req.url!.includes('missing')) res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","reason":"NotFound","message":"gone"}');
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"Application","metadata":{"name":"a"}}');
  });

  it('asks for metadata only when discarding, the object when reading, and still reads a failure', async () => {
    const path = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications';
    await expect(api.kube.request('PATCH', `${path}/a`, { body: [], contentType: 'application/json-patch+json', discardResponse: true })).resolves.toBeUndefined();
    await expect(api.kube.request('GET', `${path}/a`)).resolves.toEqual({ kind: 'Application', metadata: { name: 'a' } });
    await expect(api.kube.request('PATCH', `${path}/missing`, { body: [], discardResponse: true })).rejects.toMatchObject({ status: 404, reason: 'NotFound' });
    expect(accepted).toEqual([METADATA_ONLY, 'application/json', METADATA_ONLY]);
    expect(METADATA_ONLY).toBe('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json');
  });
});

// A revert's own share ends when its PATCH is written to a connection: a wait for one of the
// pool's connections is this process's, not the apiserver's, and is not reported as sent.
describe('KubeClient sent', () => {
  const POOL = REQUEST_SOCKETS;
  const held: http.ServerResponse[] = [];

  const api = plainApiserver((req, res) => {
    req.resume();
    held.push(res);
  });

  it('reports a call sent once it is written, not while it waits for a connection', async () => {
    const sent: number[] = [];
    const calls = Array.from({ length: POOL + 1 }, (_, i) =>
      api.kube.request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a${i}`, { body: [], discardResponse: true, onSent: () => sent.push(i) }),
    );
    await until(() => held.length >= POOL);
    await new Promise((r) => setTimeout(r, 100));
    expect(held).toHaveLength(POOL);
    expect(sent).toHaveLength(POOL);
    expect(sent).not.toContain(POOL);
    held.shift()!.writeHead(200).end('{}');
    await until(() => held.length >= POOL);
    expect(sent).toContain(POOL);
    for (const res of held.splice(0)) res.writeHead(200).end('{}');
    await Promise.all(calls);
  });

  it('sends a lease renewal at once while a burst holds every repair slot and Event write', async () => {
    const busy = CALLS_IN_FLIGHT.repairs + CALLS_IN_FLIGHT.events;
    const calls = Array.from({ length: busy }, (_, i) => api.kube.request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/b${i}`, { body: [], discardResponse: true }));
    await until(() => held.length >= busy);
    let renewalSent = false;
    const renewal = api.kube.request('PUT', '/apis/coordination.k8s.io/v1/namespaces/spec-guard/leases/spec-guard', { body: {}, onSent: () => (renewalSent = true) });
    await until(() => renewalSent);
    expect(renewalSent).toBe(true);
    for (const res of held.splice(0)) res.writeHead(200).end('{}');
    await Promise.all([...calls, renewal]);
  });
});

// An apiserver behind a proxy (Rancher, a cluster gateway) is served under the path of the
// kubeconfig's server URL: every call and watch goes under it, with its query encoded.
describe('KubeClient under a server path', () => {
  const urls: string[] = [];

  const api = plainApiserver((req, res) => {
    urls.push(req.url!);
    if (req.url!.includes('watch=1')) res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"ADDED","object":{"kind":"Secret"}}\n');
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"SecretList","items":[]}');
  }, '/k8s/clusters/c-1/');

  it('sends calls and watches under the prefix, with every defined query member encoded', async () => {
    await api.kube.request('GET', '/api/v1/namespaces/argocd/secrets', { query: { labelSelector: 'app in (a,b)', limit: '5', continue: undefined } });
    const events: unknown[] = [];
    await api.kube.stream('/api/v1/namespaces/argocd/secrets', { watch: '1', resourceVersion: '7' }, (e) => events.push(e), new AbortController().signal);
    expect(urls).toEqual([
      '/k8s/clusters/c-1/api/v1/namespaces/argocd/secrets?labelSelector=app%20in%20(a%2Cb)&limit=5',
      '/k8s/clusters/c-1/api/v1/namespaces/argocd/secrets?watch=1&resourceVersion=7',
    ]);
    expect(events).toEqual([{ type: 'ADDED', object: { kind: 'Secret' } }]);
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
    kube = await tokenClient(server, ca.cert);
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

// The CA, client certificate and key reach the connections as one TLS context (not as options
// the agent would name its pool by on every call): still verified, still presented, still pooled.
describe('KubeClient over TLS with a client certificate', () => {
  const ca = createCA('kube-client-test-ca');
  const serving = createServingCert(ca, ['127.0.0.1']);
  const client = createServingCert(ca, ['spec-guard-client']);
  let server: https.Server;
  const handshakes: string[] = [];

  const kubeconfigFor = (port: number, caPem: string) => {
    const kc = new KubeConfig();
    const b64 = (pem: string) => Buffer.from(pem).toString('base64');
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, caData: b64(caPem) }],
      users: [{ name: 'u', certData: b64(client.cert), keyData: b64(client.key) }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return kc;
  };

  beforeAll(async () => {
    server = https.createServer({ key: serving.key, cert: serving.cert, requestCert: true, rejectUnauthorized: false, keepAliveTimeout: 5_000 }, (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', clientCN: peer.subject?.CN ?? null })));
    });
    server.on('secureConnection', (socket) => handshakes.push(socket.getPeerCertificate().subject?.CN ?? 'none'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });

  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('verifies the server by the kubeconfig CA, presents its client certificate, and keeps its connections', async () => {
    const kube = await KubeClient.fromKubeConfig(kubeconfigFor((server.address() as AddressInfo).port, ca.cert));
    try {
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(Array.from({ length: 4 }, () => kube.request<{ clientCN: string }>('GET', '/api/v1/namespaces/argocd/secrets')));
        expect(answers.map((a) => a.clientCN)).toEqual(Array(4).fill('spec-guard-client'));
      }
      // 20 calls, 4 at a time: the same 4 connections (one handshake each), never one per call.
      expect(handshakes.length).toBeLessThanOrEqual(4);
      expect(new Set(handshakes)).toEqual(new Set(['spec-guard-client']));
    } finally {
      kube.close();
    }
  });

  it('refuses a server the kubeconfig CA did not sign', async () => {
    const other = createCA('another-ca');
    const kube = await KubeClient.fromKubeConfig(kubeconfigFor((server.address() as AddressInfo).port, other.cert));
    try {
      await expect(kube.request('GET', '/api/v1/namespaces/argocd/secrets')).rejects.toThrow(/certificate/);
    } finally {
      kube.close();
    }
  });
});

// The apiserver closes a connection idle for 90 s (here: 300 ms). A burst of reverts after a
// quiet spell opened a connection per revert in flight, against an apiserver the drifts
// saturate, and each revert waited for its handshake: the leader keeps them open instead.
describe('KubeClient connections kept open', () => {
  const IDLE_MS = 300;
  const REPAIRS = 8;
  let server: https.Server;
  let kube: KubeClient;
  let handshakes = 0;
  const paths: string[] = [];
  const held: http.ServerResponse[] = [];

  beforeAll(async () => {
    const ca = createCA();
    const serving = createServingCert(ca, ['127.0.0.1']);
    // Go's IdleTimeout, as the apiserver has it: a connection without a request for IDLE_MS is
    // closed, and no Keep-Alive header tells the client so (Node's keepAliveTimeout would).
    const idle = new WeakMap<object, NodeJS.Timeout>();
    server = https.createServer({ cert: serving.cert, key: serving.key, keepAliveTimeout: 0 }, (req, res) => {
      clearTimeout(idle.get(req.socket));
      res.on('finish', () => idle.set(req.socket, setTimeout(() => req.socket.destroy(), IDLE_MS)));
      paths.push(req.url!);
      req.resume();
      if (req.url === '/hold') held.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(req.url === '/version' ? '{"major":"1"}' : '{"kind":"Application"}');
    });
    server.on('secureConnection', () => handshakes++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    kube = await tokenClient(server, ca.cert);
  });

  afterAll(() => {
    kube?.close();
    server.closeAllConnections();
    server.close();
  });

  it('finds a connection open for each revert of a burst after a quiet spell longer than the idle timeout', async () => {
    const stop = kube.keepConnectionsOpen(REPAIRS, IDLE_MS / 3);
    await until(() => handshakes >= REPAIRS);
    await new Promise((r) => setTimeout(r, 3 * IDLE_MS));
    stop();
    await new Promise((r) => setTimeout(r, 20));
    const before = handshakes;
    await Promise.all(Array.from({ length: REPAIRS }, (_, i) => kube.request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a${i}`, { body: [], discardResponse: true })));
    expect(handshakes - before).toBe(0);
  });

  it('refreshes none while calls are in flight: they hold their connections, and a refresh would take the others', async () => {
    paths.length = 0;
    const call = kube.request('GET', '/hold');
    await until(() => held.length === 1);
    const stop = kube.keepConnectionsOpen(REPAIRS, 20);
    await new Promise((r) => setTimeout(r, 150));
    stop();
    expect(paths.filter((p) => p === '/version')).toEqual([]);
    held.shift()!.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    await call;
  });
});

// A watch's events arrive in chunks that cut lines anywhere: inside a large object, between
// two events, inside a multi-byte character. Each event is parsed whole, exactly once.
describe('KubeClient watch lines', () => {
  const big = { type: 'MODIFIED', object: { kind: 'Application', metadata: { name: 'café-😀' }, status: { resources: Array.from({ length: 3_000 }, (_, i) => ({ name: `r-${i}`, note: 'é😀ü' })) } } };
  const small = (i: number) => ({ type: 'ADDED', object: { kind: 'Application', metadata: { name: `a-${i}` } } });

  const api = plainApiserver((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    // Two events and a blank line in one piece, then the large one in 1,000-byte pieces
    // (cutting characters of 2 and 4 bytes), the last piece carrying the start of the next.
    const bytes = Buffer.from(`${JSON.stringify(small(1))}\n${JSON.stringify(small(2))}\n\n${JSON.stringify(big)}\n${JSON.stringify(small(3))}\n`);
    const pieces: Buffer[] = [];
    const head = bytes.indexOf('\n\n') + 2;
    pieces.push(bytes.subarray(0, head));
    for (let at = head; at < bytes.length; at += 1_000) pieces.push(bytes.subarray(at, Math.min(bytes.length, at + 1_000)));
    const next = () => {
      const piece = pieces.shift();
      if (!piece) return void res.end();
      res.write(piece);
      setTimeout(next, 1);
    };
    next();
  });

  it('parses every event whole, whatever the chunks cut', async () => {
    const events: unknown[] = [];
    await api.kube.stream('/apis/argoproj.io/v1alpha1/applications', { watch: '1' }, (e) => events.push(e), new AbortController().signal);
    expect(events).toEqual([small(1), small(2), big, small(3)]);
  });
});
