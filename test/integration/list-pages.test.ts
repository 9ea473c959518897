import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../src/kube/index.js';
import { Reflector, type ListedObject } from '../../src/kube/reflector.js';
import { plainHttpClient } from '../helpers/kube-client.js';

/**
 * A paged collection served from another thread, so that it takes requests while this
 * thread is busy handling a page, as the apiserver does: list requests it took are counted
 * in shared memory, which the busy thread can read. Three pages of one object each; a watch
 * is held open until the client goes.
 */
const SERVER = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const asked = new Int32Array(workerData.asked);
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.searchParams.get('watch')) { res.writeHead(200, { 'content-type': 'application/json' }); return; }
  Atomics.add(asked, 0, 1);
  Atomics.notify(asked, 0);
  const page = Number(url.searchParams.get('continue') ?? 0);
  const item = { metadata: { name: 'o' + page, namespace: 'ns', resourceVersion: '7' } };
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ metadata: { resourceVersion: '7', continue: page < 2 ? String(page + 1) : undefined }, items: [item] }));
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

describe('a list, page by page, against a server on its own thread', () => {
  const asked = new Int32Array(new SharedArrayBuffer(4));
  let worker: Worker | undefined;
  let kube: KubeClient | undefined;
  beforeAll(async () => {
    worker = new Worker(SERVER, { eval: true, workerData: { asked: asked.buffer } });
    const port = await new Promise<number>((resolve) => worker.once('message', resolve));
    kube = await plainHttpClient(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    kube?.close();
    await worker?.terminate();
  });

  it("has the next page's request sent before it handles a page: the apiserver prepares it while spec-guard classifies", async () => {
    // Handling a page is busy, synchronous work (the page's classification). While it runs, the
    // server should already hold the request for the next page: page k (from 0) waits up to a
    // second for k + 2 requests (the last for none more), and notes how many the server took.
    const askedWhileHandling: number[] = [];
    const reflector = new Reflector<ListedObject>(kube!, { path: '/x', pageSize: 1 }, {
      onListPage: (_items, last) => {
        const want = askedWhileHandling.length + (last ? 1 : 2);
        const deadline = Date.now() + 1000;
        for (let now = Atomics.load(asked, 0); now < want && Date.now() < deadline; now = Atomics.load(asked, 0)) Atomics.wait(asked, 0, now, deadline - Date.now());
        askedWhileHandling.push(Atomics.load(asked, 0));
      },
      onEvent: () => undefined,
    });
    await reflector.start();
    reflector.stop();
    // Before the fix the next request left only after the page was handled: [1, 2, 3].
    expect(askedWhileHandling).toEqual([2, 3, 3]);
  });
});
