// Baselines for bench/admission, bare Node HTTPS servers:
//   fixed  reads the body and answers a fixed allow (the floor: TLS and HTTP only)
//   parse  also parses the JSON body and echoes its uid, as any webhook must
//   least  also does the least a guard's answer needs: /validate compares the spec with the
//          old one (a walk, equal or not) and denies a change; /mutate serializes the spec,
//          hashes it and signs the hash (a stamp) into a JSON patch. No envelope check, no
//          exact integers, no normalizer, no metrics: what spec-guard costs beyond this is its own.
// Usage: node bare-server.js fixed|parse|least CERT KEY PORT
import { createHmac, hash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';

const [mode, cert, key, port] = process.argv.slice(2);
const fixed = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'fixed', allowed: true } });
const stampKey = randomBytes(32);

interface Review {
  request?: { uid?: string; name?: string; object?: { spec?: unknown }; oldObject?: { spec?: unknown } };
}

/** Deep equality of parsed JSON, allocation-free (no key arrays): the cheapest walk that answers "changed?". */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equal(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const k in x) {
    if (!Object.hasOwn(y, k) || !equal(x[k], y[k])) return false;
    count++;
  }
  for (const _ in y) count--;
  return count === 0;
}

/** The least answer a guard gives: a denial of a changed spec, or a stamp of the written one. */
function leastResponse(path: string | undefined, review: Review): Record<string, unknown> {
  const { uid, name, object, oldObject } = review.request ?? {};
  if (path === '/validate') {
    if (equal(object?.spec, oldObject?.spec)) return { uid, allowed: true };
    return { uid, allowed: false, status: { code: 403, reason: 'Forbidden', message: `spec of ${name} is owned by the source of truth` } };
  }
  const viewHash = hash('sha256', JSON.stringify(object?.spec ?? null), 'hex');
  const stamp = `v2.${viewHash}.${Date.now()}.${createHmac('sha256', stampKey).update(`${viewHash}.${name}`).digest('base64url')}`;
  const patch = [{ op: 'add', path: '/metadata/annotations/spec-guard.io~1stamp', value: stamp }];
  return { uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') };
}

https
  .createServer({ cert: readFileSync(cert!), key: readFileSync(key!) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => mode !== 'fixed' && chunks.push(c));
    req.on('end', () => {
      let reply = fixed;
      if (mode !== 'fixed') {
        try {
          const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Review;
          const response = mode === 'least' ? leastResponse(req.url, review) : { uid: review.request?.uid, allowed: true };
          reply = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
        } catch {
          res.writeHead(400).end();
          return;
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    });
  })
  .listen(Number(port), '127.0.0.1');
