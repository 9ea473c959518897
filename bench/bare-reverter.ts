// The floor of a revert in Node.js, for bench/revert: what any watcher that reverts must do and
// nothing else. It lists the Applications of one namespace once (their targetRevision is
// the value it keeps), watches them, parses every watch event, and answers each drift of
// spec.source.targetRevision with one JSON patch (a resourceVersion precondition and one
// replace, as spec-guard's) and one Event of spec-guard's shape, both through node:https
// with kept-alive connections. No attribution, no stamps, no store, no logs.
// Usage: node bare-reverter.js SERVER CA CERT KEY NAMESPACE (prints "watching" once it watches)
import { readFileSync } from 'node:fs';
import https from 'node:https';

const [server, caFile, certFile, keyFile, namespace] = process.argv.slice(2) as [string, string, string, string, string];
const agent = new https.Agent({ ca: readFileSync(caFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), keepAlive: true, maxSockets: 64 });
const apps = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/applications`;

interface App {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string };
  spec: { source: { targetRevision: string } };
}

function call(method: string, path: string, body?: string, contentType = 'application/json', onData?: (chunk: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    // Writes ask for their answer as metadata only, as spec-guard's do: nobody reads it.
    const headers: Record<string, string> = { accept: method === 'GET' ? 'application/json' : 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json' };
    if (body !== undefined) Object.assign(headers, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
    const req = https.request(`${server}${path}`, { method, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (onData ? onData(chunk) : (text += chunk)));
      res.on('end', () => ((res.statusCode ?? 0) < 300 ? resolve(text) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const kept = new Map<string, string>();
let events = 0;

function revert(app: App, value: string): void {
  const { name, uid, resourceVersion } = app.metadata;
  const patch = [{ op: 'test', path: '/metadata/resourceVersion', value: resourceVersion }, { op: 'replace', path: '/spec/source/targetRevision', value }];
  const now = new Date().toISOString();
  const event = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${name}.bare-${process.pid}-${events++}`, namespace },
    involvedObject: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', name, namespace, uid },
    type: 'Warning',
    reason: 'SpecDriftReverted',
    message: `spec.source.targetRevision was changed without the source of truth; reverted to ${value}`,
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: 'bare-reverter' },
  };
  call('PATCH', `${apps}/${name}`, JSON.stringify(patch), 'application/json-patch+json')
    .then(() => call('POST', `/api/v1/namespaces/${namespace}/events`, JSON.stringify(event)))
    .catch((err: Error) => process.stderr.write(`${err.message}\n`));
}

const list = JSON.parse(await call('GET', apps)) as { metadata: { resourceVersion: string }; items: App[] };
for (const app of list.items) kept.set(app.metadata.name, app.spec.source.targetRevision);
// The apiserver ends a watch that falls behind in a burst: watch again from the last revision seen.
let from = list.metadata.resourceVersion;
for (let first = true; ; first = false) {
  let buffered = '';
  const watching = call('GET', `${apps}?watch=1&allowWatchBookmarks=false&resourceVersion=${from}`, undefined, undefined, (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const { type, object } = JSON.parse(line) as { type: string; object: App };
      from = object.metadata.resourceVersion;
      const value = kept.get(object.metadata.name);
      if (type === 'MODIFIED' && value !== undefined && object.spec.source.targetRevision !== value) revert(object, value);
    }
  });
  if (first) process.stdout.write('watching\n');
  await watching;
}
