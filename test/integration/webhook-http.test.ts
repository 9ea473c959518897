import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { review, stamp } from '../helpers/admission.js';
import { startServer, type RunningServer } from '../helpers/server.js';

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** A valid request that must always be answered: proves the server survived. */
async function expectStillAnswers(): Promise<void> {
  const body = review('agent-create');
  const reply = await server.request('POST', '/mutate', JSON.stringify(body));
  expect(reply.status).toBe(200);
  expect(reply.json()).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: body.request.uid, allowed: true } });
}

describe('admission over HTTPS', () => {
  it('stamps a trusted create with a base64 JSONPatch and echoes the uid', async () => {
    const body = review('agent-create');
    const reply = await server.request('POST', '/mutate', JSON.stringify(body));
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    const response = reply.json<{ response: { uid: string; allowed: boolean; patchType: string; patch: string } }>().response;
    expect(response).toMatchObject({ uid: body.request.uid, allowed: true, patchType: 'JSONPatch' });
    const patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
    expect(patch).toEqual([{ op: 'add', path: '/metadata/annotations/spec-guard.io~1stamp', value: expect.stringMatching(/^v2\./) }]);
  });

  it('denies an untrusted spec change with 403 inside a 200 response', async () => {
    const body = review('alice-update-spec');
    stamp(server.t, body.request, body.request.oldObject!);
    body.request.object!.metadata!.annotations![STAMP_ANNOTATION] = body.request.oldObject!.metadata!.annotations![STAMP_ANNOTATION]!;
    const reply = await server.request('POST', '/validate', JSON.stringify(body));
    expect(reply.status).toBe(200);
    expect(reply.json()).toMatchObject({ response: { uid: body.request.uid, allowed: false, status: { code: 403, reason: 'Forbidden' } } });
  });

  it('records the tombstone of a trusted delete before admitting it, never for dryRun', async () => {
    const del = review('alice-delete');
    del.request.userInfo = { username: 'system:serviceaccount:argocd:argocd-agent-agent' };
    const before = server.tombstones.length;
    const dry = await server.request('POST', '/validate', JSON.stringify({ ...del, request: { ...del.request, dryRun: true } }));
    expect(dry.json()).toMatchObject({ response: { allowed: true } });
    expect(server.tombstones.length).toBe(before);
    await server.request('POST', '/validate', JSON.stringify(del));
    expect(server.tombstones.length).toBe(before + 1);
    expect(server.tombstones.at(-1)!.uid).toBe(del.request.uid);
  });

  it('refuses a trusted delete whose tombstone cannot be recorded', async () => {
    const del = review('alice-delete');
    del.request.userInfo = { username: 'system:serviceaccount:argocd:argocd-agent-agent' };
    server.failTombstones = true;
    try {
      const reply = await server.request('POST', '/validate', JSON.stringify(del));
      expect(reply.json()).toMatchObject({ response: { allowed: false, status: { code: 403 } } });
      expect(reply.json<{ response: { status: { message: string } } }>().response.status.message).toContain('could not record this delete (store unavailable)');
    } finally {
      server.failTombstones = false;
    }
  });

  it('answers reviews only: health and readiness are served once, on the metrics port', async () => {
    expect((await server.request('GET', '/healthz')).status).toBe(404);
    expect((await server.request('GET', '/readyz')).status).toBe(404);
  });
});

describe('bad input gets a clear error and changes nothing', () => {
  const valid = () => review('alice-update-spec');
  const cases: Array<[string, string | (() => string), number, RegExp]> = [
    ['non-JSON', '{"apiVersion": "admission.k8s.io/v1", kind', 400, /not valid JSON/],
    ['a JSON array', '[1,2]', 400, /must be a JSON object/],
    ['another apiVersion', () => JSON.stringify({ ...valid(), apiVersion: 'admission.k8s.io/v1beta1' }), 400, /expected apiVersion admission.k8s.io\/v1/],
    ['no request', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }), 400, /request: .*expected object/],
    ['no request.uid', () => { const r = valid(); delete (r.request as { uid?: string }).uid; return JSON.stringify(r); }, 400, /request\.uid: .*expected string/],
    ['a bad operation', () => { const r = valid(); (r.request as { operation: string }).operation = 'PATCH'; return JSON.stringify(r); }, 400, /request\.operation/],
    ['a non-object object', () => { const r = valid(); (r.request as { object: unknown }).object = 'x'; return JSON.stringify(r); }, 400, /request\.object: .*expected object/],
    // Every field the decision reads, of the wrong type: a 400 naming it, never a 500.
    ['userInfo.groups a string', () => { const r = valid(); (r.request.userInfo as { groups: unknown }).groups = 'system:masters'; return JSON.stringify(r); }, 400, /request\.userInfo\.groups: .*expected array/],
    ['userInfo.groups a number', () => { const r = valid(); (r.request.userInfo as { groups: unknown }).groups = 7; return JSON.stringify(r); }, 400, /request\.userInfo\.groups/],
    ['userInfo.username a number', () => { const r = valid(); (r.request.userInfo as { username: unknown }).username = 1; return JSON.stringify(r); }, 400, /request\.userInfo\.username/],
    ['labels with a number value', () => { const r = valid(); (r.request.object!.metadata as { labels: unknown }).labels = { a: 1 }; return JSON.stringify(r); }, 400, /request\.object\.metadata\.labels\.a/],
    ['annotations an array', () => { const r = valid(); (r.request.oldObject!.metadata as { annotations: unknown }).annotations = ['x']; return JSON.stringify(r); }, 400, /request\.oldObject\.metadata\.annotations/],
    ['resource.group missing', () => { const r = valid(); delete (r.request.resource as { group?: string }).group; return JSON.stringify(r); }, 400, /request\.resource\.group/],
    ['a name longer than the apiserver allows', () => { const r = valid(); r.request.name = 'n'.repeat(254); return JSON.stringify(r); }, 400, /request\.name/],
    ['dryRun a string', () => { const r = valid(); (r.request as { dryRun: unknown }).dryRun = 'true'; return JSON.stringify(r); }, 400, /request\.dryRun/],
  ];

  it('managedFields of any shape are decided as usual: nothing reads them, so they are not checked', async () => {
    const r = valid();
    (r.request.object!.metadata as { managedFields: unknown }).managedFields = { planted: true };
    const reply = await server.request('POST', '/validate', JSON.stringify(r));
    expect(reply.status).toBe(200);
    expect(reply.json<{ response: { uid: string; allowed: boolean } }>().response).toMatchObject({ uid: r.request.uid, allowed: expect.any(Boolean) });
  });

  it.each(cases)('%s → %d', async (_name, body, status, message) => {
    const before = server.tombstones.length;
    const reply = await server.request('POST', '/validate', typeof body === 'function' ? body() : body);
    expect(reply.status).toBe(status);
    expect(reply.json<{ error: string }>().error).toMatch(message);
    expect(server.tombstones.length).toBe(before);
    await expectStillAnswers();
  });

  it('a body over 3 MiB → 413', async () => {
    const big = JSON.stringify({ ...valid(), padding: 'x'.repeat(3 * 1024 * 1024 + 10) });
    const reply = await server.request('POST', '/validate', big);
    expect(reply.status).toBe(413);
    expect(reply.json<{ error: string }>().error).toMatch(/larger than 3145728 bytes/);
    await expectStillAnswers();
  });

  it('an unknown path → 404, a wrong method → 405 with Allow', async () => {
    const missing = await server.request('POST', '/admit', '{}');
    expect(missing.status).toBe(404);
    expect(missing.json<{ error: string }>().error).toBe('no such path: /admit');
    const wrong = await server.request('GET', '/mutate');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
    const put = await server.request('PUT', '/validate', 'x');
    expect(put.status).toBe(405);
    await expectStillAnswers();
  });

  it('counts the errors by code', async () => {
    const text = await server.metrics.registry.getSingleMetricAsString('spec_guard_admission_errors_total');
    expect(text).toMatch(/spec_guard_admission_errors_total\{code="400"\} [1-9]/);
    expect(text).toMatch(/spec_guard_admission_errors_total\{code="413"\} 1/);
  });
});

describe('hostile traffic on the webhook port', () => {
  it('forged reviews naming 2,000 made-up resources add no metric label set', async () => {
    const valid = review('alice-update-spec');
    for (let i = 0; i < 2000; i++) {
      const forged = structuredClone(valid);
      forged.request.uid = `forged-${i}`;
      forged.request.resource = { group: `evil${i}.example.com`, version: 'v1', resource: `things${i}` };
      const reply = await server.request('POST', '/validate', JSON.stringify(forged));
      expect(reply.status).toBe(200);
    }
    const text = await server.metrics.registry.getSingleMetricAsString('spec_guard_admission_requests_total');
    expect(text).not.toMatch(/evil|things/);
    expect(text).toMatch(/resource="other"/);
    const labelSets = text.split('\n').filter((l) => l.startsWith('spec_guard_admission_requests_total{'));
    expect(labelSets.length).toBeLessThan(20);
  });
});

describe('deeply nested specs', () => {
  /** JSON text nested `depth` levels deep, as the apiserver accepts it (built as text: too deep for JSON.stringify here). */
  const deep = (depth: number) => `${'{"a":'.repeat(depth)}{"leaf":true}${'}'.repeat(depth)}`;

  it.each([['mutate'], ['validate']])('a spec 9,500 levels deep on /%s from alice is a clear denial, not a 500', async (path) => {
    const r = review('alice-update-spec');
    (r.request.object!.spec as Record<string, unknown>).source = 'DEEP';
    const reply = await server.request('POST', `/${path}`, JSON.stringify(r).replace('"DEEP"', deep(9500)));
    expect(reply.status).toBe(200);
    const response = reply.json<{ response: { allowed: boolean; status: { message: string } } }>().response;
    expect(response.allowed).toBe(false);
    expect(response.status.message).toMatch(/nests deeper than 1000 levels/);
    await expectStillAnswers();
  });

  it('the same spec from the agent is admitted unstamped, with a warning: the source of truth is never refused', async () => {
    const r = review('alice-update-spec');
    r.request.userInfo = { username: 'system:serviceaccount:argocd:argocd-agent-agent', groups: [] };
    (r.request.object!.spec as Record<string, unknown>).source = 'DEEP';
    const reply = await server.request('POST', '/mutate', JSON.stringify(r).replace('"DEEP"', deep(9500)));
    expect(reply.status).toBe(200);
    const response = reply.json<{ response: { allowed: boolean; patch?: string; warnings?: string[] } }>().response;
    expect(response.allowed).toBe(true);
    expect(response.patch).toBeUndefined();
    expect(response.warnings?.join()).toMatch(/nests deeper than 1000 levels; admitted unstamped/);
    await expectStillAnswers();
  });
});

describe('a flood of large forged reviews', () => {
  /** A large review whose body is still being sent: it holds a slot of the large-review budget. */
  function slowLargeReview(): https.ClientRequest {
    const req = https.request({ host: '127.0.0.1', port: server.port, path: '/validate', method: 'POST', ca: server.ca, headers: { 'content-type': 'application/json', 'content-length': 2_500_000 } });
    req.on('error', () => undefined);
    req.write('{"apiVersion":"admission.k8s.io/v1",');
    return req;
  }

  it('past its budget a large review is refused with 429 at once; small trusted reviews are answered meanwhile', async () => {
    const holding = [slowLargeReview(), slowLargeReview()];
    await new Promise((r) => setTimeout(r, 200));
    const forged = review('alice-update-spec');
    (forged.request.object!.spec as Record<string, unknown>).padding = 'x'.repeat(2_500_000);
    const refused = await server.request('POST', '/validate', JSON.stringify(forged));
    expect(refused.status).toBe(429);
    expect(refused.json<{ error: string }>().error).toMatch(/too many large admission reviews in flight/);
    const small = JSON.stringify(review('agent-create'));
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const reply = await server.request('POST', '/mutate', small);
      expect(reply.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    holding.forEach((r) => r.destroy());
    await new Promise((r) => setTimeout(r, 200));
    // The slots are free again.
    expect((await server.request('POST', '/validate', JSON.stringify(forged))).status).toBe(200);
  });
});
