import https from 'node:https';
import { describe, expect, it, jest } from '@jest/globals';
import { review } from '../helpers/admission.js';
import { applicationsConfig, startStandalone } from '../helpers/cli.js';

// Each test starts spec-guard as a process of its own: on a shared 2-core machine compiling a
// kube-apiserver beside the suite, that can take longer than the default 5 s. A hang still fails.
jest.setTimeout(30_000);

describe('graceful shutdown', () => {
  it('on SIGTERM stops being ready, finishes every in-flight admission request, then exits 0', async () => {
    const daemon = startStandalone(applicationsConfig());
    const { webhookPort, metricsPort } = JSON.parse(await daemon.waitForLog(/spec-guard ready/)) as { webhookPort: number; metricsPort: number };

    // Requests in flight: headers and half of each body sent, the rest after SIGTERM.
    const body = Buffer.from(JSON.stringify(review('alice-delete')));
    const half = Math.floor(body.length / 2);
    const inFlight = Array.from({ length: 20 }, (_, i) => {
      const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
      const req = https.request({
        host: '127.0.0.1',
        port: webhookPort,
        method: 'POST',
        path: i % 2 ? '/validate' : '/mutate',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      });
      const reply = new Promise<{ status: number; text: string }>((resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        });
        req.on('error', reject);
      });
      req.write(body.subarray(0, half));
      return { req, reply };
    });
    await new Promise((r) => setTimeout(r, 200));
    daemon.child.kill('SIGTERM');
    await daemon.waitForLog(/shutting down/);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.status ?? 503).toBe(503);
    for (const { req } of inFlight) req.end(body.subarray(half));
    const replies = await Promise.all(inFlight.map((f) => f.reply));
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(JSON.parse(reply.text).response.status.code).toBe(403);
    }
    expect(await daemon.exited).toBe(0);
  });
});
