// A stand-in apiserver for bench/revert-own: it serves the Applications of one namespace
// (list in pages, watch with resume, JSON patches with their resourceVersion test, Events)
// over HTTPS (HTTP/2 or 1.1, as the client asks) with kept-alive connections, writes objects
// with sorted keys as the apiserver does, and drifts them when told to. What a reverter spends
// per revert against it is its own CPU alone: no kube-apiserver and etcd taking the two cores
// (and their caches) the reverter runs on, as in bench/revert.
// Usage: node fake-apiserver.js CERT KEY PORT STAMP_KEY_FILE COUNT (prints "serving")
// Control, on the same port: GET /bench/calls, the calls served so far by kind (count, body
// bytes); POST /bench/drift {"revision": "..."} drifts every object at once and answers once
// each is back (its targetRevision as listed), with each drift's time to its revert (ms, from
// the drift's event written to the reverting PATCH received).
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseConfig } from '../src/config/index.js';
import { getAt, objectKey, parsePointer, Policy, removeAt, setAt, Stamper, type PatchOp } from '../src/guard/index.js';
import { bulkyApplication } from './burst.js';
import { benchReverterConfig, sortKeys } from './workload.js';

const [cert, key, port, stampKeyFile, count] = process.argv.slice(2) as [string, string, string, string, string];
const NAMESPACE = 'argocd';
const APPS = `/apis/argoproj.io/v1alpha1/namespaces/${NAMESPACE}/applications`;
const EVENTS = `/api/v1/namespaces/${NAMESPACE}/events`;
/** Watch events kept for a watch that resumes from a revision (the reverters' watches end and resume). */
const KEPT_EVENTS = 50_000;

type App = ReturnType<typeof bulkyApplication> & { metadata: Record<string, unknown> };

let revision = 1;
const apps = new Map<string, App>();
const listedRevision = new Map<string, string>();
const history: Array<{ rv: number; line: string }> = [];
const watchers = new Set<ServerResponse>();
let drift: { started: Map<string, number>; latencies: number[]; done: () => void } | undefined;

// Every Application stamped by the source of truth, as the agent's writes through spec-guard are.
const stamper = new Stamper(readFileSync(stampKeyFile));
const view = new Policy(parseConfig(benchReverterConfig, 'bench.yaml'), 'bench').rules[0]!.view;
const created = new Date().toISOString();
for (let i = 0; i < Number(count); i++) {
  const app = bulkyApplication(`bench-own-${i}`, i) as App;
  const name = app.metadata.name as string;
  const stamp = stamper.stamp(view.of(app).hash, objectKey('argoproj.io', 'applications', NAMESPACE, name), Date.now());
  Object.assign(app.metadata, { uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, resourceVersion: String(++revision), generation: 1, creationTimestamp: created, annotations: { 'spec-guard.io/stamp': stamp } });
  apps.set(name, sortKeys(app) as App);
  listedRevision.set(name, app.spec.source.targetRevision as string);
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

/** The object stored anew at the next revision (its keys sorted, as the apiserver writes them), its event written to every watch. */
function store(written: App): void {
  const app = sortKeys(written) as App;
  app.metadata.resourceVersion = String(++revision);
  apps.set(app.metadata.name as string, app);
  const line = `${JSON.stringify({ type: 'MODIFIED', object: app })}\n`;
  history.push({ rv: revision, line });
  if (history.length > KEPT_EVENTS) history.splice(0, history.length - KEPT_EVENTS);
  for (const res of watchers) res.write(line);
}

function list(res: ServerResponse, query: URLSearchParams): void {
  const items = [...apps.values()];
  const from = Number(query.get('continue') ?? 0);
  const limit = Number(query.get('limit') ?? items.length) || items.length;
  const page = items.slice(from, from + limit);
  const next = from + limit < items.length ? String(from + limit) : undefined;
  send(res, 200, { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationList', metadata: { resourceVersion: String(revision), ...(next ? { continue: next } : {}) }, items: page });
}

function watch(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): void {
  const from = Number(query.get('resourceVersion') ?? revision);
  if (history.length && from < history[0]!.rv - 1) return send(res, 410, status(410, 'Expired', 'too old resource version'));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.flushHeaders(); // a watch is open once its headers arrive (Go's client waits for them)
  for (const { rv, line } of history) if (rv > from) res.write(line);
  watchers.add(res);
  const timeout = Number(query.get('timeoutSeconds') ?? 0);
  const timer = timeout ? setTimeout(() => res.end(), timeout * 1000) : undefined;
  req.on('close', () => {
    watchers.delete(res);
    clearTimeout(timer);
  });
}

/** A JSON patch applied to a copy, its first op the resourceVersion test the reverters send. */
function patch(name: string, ops: PatchOp[], res: ServerResponse): void {
  const current = apps.get(name);
  if (!current) return send(res, 404, status(404, 'NotFound', `applications "${name}" not found`));
  const next = structuredClone(current);
  for (const op of ops) {
    const tokens = parsePointer(op.path);
    if (op.op === 'test') {
      if (JSON.stringify(getAt(next, tokens)) !== JSON.stringify(op.value)) return send(res, 409, status(409, 'Conflict', `test of ${op.path} failed`));
    } else if (op.op === 'remove') removeAt(next, tokens);
    else setAt(next as Record<string, unknown>, tokens, op.value);
  }
  store(next);
  send(res, 200, next);
  const at = drift?.started.get(name);
  if (drift && at !== undefined && next.spec.source.targetRevision === listedRevision.get(name)) {
    drift.started.delete(name);
    drift.latencies.push(performance.now() - at);
    if (drift.started.size === 0) drift.done();
  }
}

/** Every object drifted at once (one event each, written back to back); resolves with the time of each to its revert. */
function driftAll(revisionValue: string): Promise<number[]> {
  return new Promise((resolve) => {
    const latencies: number[] = [];
    drift = { started: new Map(), latencies, done: () => resolve(latencies.sort((a, b) => a - b)) };
    for (const app of [...apps.values()]) {
      const next = structuredClone(app);
      next.spec.source.targetRevision = revisionValue;
      store(next);
      drift.started.set(next.metadata.name as string, performance.now());
    }
  });
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

/** Calls served, by method and what they were for, and the bytes of their bodies: what a reverter asks of an apiserver. */
const calls: Record<string, { count: number; bytes: number }> = {};

function callKind(method: string, pathname: string, query: URLSearchParams): string {
  const what = pathname === APPS ? (query.get('watch') ? 'watch' : 'list') : pathname.startsWith(`${APPS}/`) ? 'application' : pathname.startsWith(EVENTS) ? 'event' : pathname;
  return `${method} ${what}`;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url!, 'https://fake');
  const { pathname, searchParams } = url;
  const text = await body(req);
  if (pathname === '/bench/calls') return send(res, 200, calls);
  if (!pathname.startsWith('/bench/')) {
    const tally = (calls[callKind(req.method!, pathname, searchParams)] ??= { count: 0, bytes: 0 });
    tally.count++;
    tally.bytes += Buffer.byteLength(text);
  }
  if (req.method === 'GET' && pathname === APPS) return searchParams.get('watch') ? watch(req, res, searchParams) : list(res, searchParams);
  if (req.method === 'PATCH' && pathname.startsWith(`${APPS}/`)) return patch(pathname.slice(APPS.length + 1), JSON.parse(text) as PatchOp[], res);
  if (pathname.startsWith(EVENTS)) return send(res, req.method === 'POST' ? 201 : 200, text || '{}');
  if (req.method === 'GET' && pathname === '/version') return send(res, 200, { major: '1', minor: '34', gitVersion: 'v1.34.4-fake' });
  if (req.method === 'POST' && pathname === '/bench/drift') return send(res, 200, { latencies: await driftAll((JSON.parse(text) as { revision: string }).revision) });
  send(res, 404, status(404, 'NotFound', `the fake apiserver does not serve ${req.method} ${pathname}`));
}

// HTTP/2 for the clients that ask for it (Go's, as with a kube-apiserver), HTTP/1.1 for the
// others (Node.js's https), kept alive as long as a kube-apiserver keeps them.
const server = http2.createSecureServer({ cert: readFileSync(cert), key: readFileSync(key), requestCert: true, rejectUnauthorized: false, allowHTTP1: true }, (req, res) => {
  const [request, response] = [req as unknown as IncomingMessage, res as unknown as ServerResponse];
  handle(request, response).catch((err: Error) => send(response, 500, status(500, 'InternalError', err.message)));
});
(server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = 120_000;
// Connections opened, counted as calls: each is a TLS handshake the reverter pays for.
server.on('secureConnection', () => (calls['TLS connection'] ??= { count: 0, bytes: 0 }).count++);
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('serving\n'));
