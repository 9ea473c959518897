import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/log/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { AdmissionBudget } from '../../src/webhook/admission-budget.js';
import { HttpError } from '../../src/webhook/body.js';
import { parseReview } from '../../src/webhook/review.js';
import { authenticate, decideReview, observeDecision, readReview, withTombstone } from '../../src/webhook/pipeline.js';
import { context, review } from '../helpers/admission.js';

// The admission pipeline's steps, each on its own, with AdmissionReviews captured from a real
// kube-apiserver: what each answers, refuses or records.
const quiet = createLogger('error', () => {});

/** A socket as node:tls reports it: authorized or not, with the client certificate's common name. */
const socket = (authorized: boolean, cn?: string) => ({ authorized, getPeerCertificate: () => ({ subject: cn ? { CN: cn } : undefined }) }) as unknown as TLSSocket;

/** A request whose body is `text`, as node:http hands it over. */
function body(text: string): IncomingMessage {
  const req = Readable.from([Buffer.from(text)]) as unknown as IncomingMessage;
  req.headers = { 'content-length': String(Buffer.byteLength(text)) };
  return req;
}

describe('the admission pipeline, step by step', () => {
  it('authenticate: no client authentication configured lets everyone through; with it, only an authorized certificate with an allowed name', () => {
    expect(() => authenticate(socket(false), undefined)).not.toThrow();
    const auth = { ca: 'PEM', allowedNames: ['front-proxy-client'] };
    expect(() => authenticate(socket(true, 'front-proxy-client'), auth)).not.toThrow();
    for (const refused of [socket(false), socket(true, 'admin'), socket(true)]) {
      expect(() => authenticate(refused, auth)).toThrow(expect.objectContaining({ status: 401 }) as unknown as Error);
    }
    expect(() => authenticate(socket(true, 'anyone'), { ca: 'PEM', allowedNames: [] })).not.toThrow();
  });

  it('authenticate: a connection\'s certificate is read once, not per review; a new CA or new names are checked again', () => {
    let reads = 0;
    const connection = { authorized: true, getPeerCertificate: () => (reads++, { subject: { CN: 'front-proxy-client' } }) } as unknown as TLSSocket;
    const auth = { ca: 'PEM', allowedNames: ['front-proxy-client'] };
    for (let review = 0; review < 3; review++) authenticate(connection, auth);
    expect(reads).toBe(1);
    authenticate(socket(true, 'front-proxy-client'), auth);
    const renamed = { ca: 'PEM', allowedNames: ['another-proxy'] };
    expect(() => authenticate(connection, renamed)).toThrow(expect.objectContaining({ status: 401 }) as unknown as Error);
    expect(reads).toBe(2);
    authenticate(connection, { ca: 'NEW PEM', allowedNames: ['front-proxy-client'] });
    expect(reads).toBe(3);
  });

  it('readReview: the request of a real review; a body that is no AdmissionReview is a 400 that says why', async () => {
    const request = await readReview(body(JSON.stringify(review('alice-update-spec'))), new AdmissionBudget(), Date.now());
    expect(request.operation).toBe('UPDATE');
    await expect(readReview(body('{"kind":"Pod"}'), new AdmissionBudget(), Date.now())).rejects.toMatchObject({ status: 400 });
    await expect(readReview(body('not json'), new AdmissionBudget(), Date.now())).rejects.toBeInstanceOf(HttpError);
  });

  it('readReview: once read, a review is not kept alive by its request (a keep-alive connection holds its request until the next one)', async () => {
    // Exposed here, in this test only: the collector has to run to show what stays reachable.
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const req = body(JSON.stringify(review('alice-update-spec')));
    let request: object | undefined = await readReview(req, new AdmissionBudget(), Date.now());
    const read = new WeakRef(request);
    request = undefined;
    await new Promise((r) => setImmediate(r));
    collect();
    expect(req.listenerCount('end')).toBeGreaterThan(0);
    expect(read.deref()).toBeUndefined();
  });

  it('parseReview: checks the envelope and hands over the body\'s own request, not a copy of it (its spec reaches the decision untouched)', () => {
    const real = review('alice-update-spec');
    const request = parseReview(real);
    expect(request).toBe(real.request);
    expect(request.object!.spec).toBe(real.request.object!.spec);
    expect(request.object!.metadata!.managedFields).toBe(real.request.object!.metadata!.managedFields);
    const badLabel = structuredClone(real);
    badLabel.request.oldObject!.metadata!.labels = { team: 7 } as unknown as Record<string, string>;
    expect(() => parseReview(badLabel)).toThrow(/request\.oldObject\.metadata\.labels\.team/);
    const badUser = structuredClone(real);
    badUser.request.userInfo.groups = ['ok', 'x'.repeat(1025)];
    expect(() => parseReview(badUser)).toThrow(/request\.userInfo\.groups\.1/);
  });

  it('decideReview: reads the labels of a namespace it does not know before deciding, when rules select namespaces by label', async () => {
    const t = context('mode: enforce\nnamespaceSelector:\n  matchLabels: {guarded: "yes"}');
    const read: string[] = [];
    const decision = await decideReview(review('alice-update-spec').request, 'validate', { ...t.ctx, namespaceLabels: () => undefined }, async (ns) => void read.push(ns));
    expect(read).toEqual(['argocd']);
    expect(decision.kind).toBeDefined();
    const unread: string[] = [];
    await decideReview(review('alice-update-spec').request, 'validate', context().ctx, async (ns) => void unread.push(ns));
    expect(unread).toEqual([]);
  });

  it('withTombstone: a trusted delete is admitted once its tombstone is stored, refused when it cannot be; dry runs and other decisions record nothing', async () => {
    const del = review('alice-delete').request;
    const allow = { kind: 'allow' as const, reason: 'trusted' as const, tombstone: true };
    const recorded: string[] = [];
    expect(await withTombstone(del, allow, async (r) => void recorded.push(r.uid), quiet)).toBe(allow);
    expect(recorded).toEqual([del.uid]);
    const refused = await withTombstone(del, allow, async () => Promise.reject(new Error('store down')), quiet);
    expect(refused).toMatchObject({ kind: 'deny', message: expect.stringContaining('store down') });
    await withTombstone({ ...del, dryRun: true }, allow, async (r) => void recorded.push(r.uid), quiet);
    await withTombstone(del, { kind: 'allow', reason: 'trusted' }, async (r) => void recorded.push(r.uid), quiet);
    expect(recorded).toHaveLength(1);
  });

  it('observeDecision: counts the decision by webhook, operation, resource and kind, and a denial as drift seen at admission', async () => {
    const metrics = new Metrics(false);
    const t = context();
    const req = review('alice-update-spec').request;
    observeDecision(metrics, quiet, 'validate', req, { kind: 'deny', changed: ['/spec'], message: 'no' }, t.ctx);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/spec_guard_admission_requests_total\{webhook="validate",operation="UPDATE",resource="applications.argoproj.io",decision="deny"\} 1/);
    expect(text).toMatch(/spec_guard_drift_detected_total\{source="admission",resource="applications.argoproj.io"\} 1/);
  });
});
