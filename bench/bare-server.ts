// Baselines for bench/admission, both bare Node HTTPS servers:
//   fixed  reads the body and answers a fixed allow (the floor: TLS and HTTP only)
//   parse  also parses the JSON body and echoes its uid, as any webhook must
// Usage: node bare-server.js fixed|parse CERT KEY PORT
import { readFileSync } from 'node:fs';
import https from 'node:https';

const [mode, cert, key, port] = process.argv.slice(2);
const fixed = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'fixed', allowed: true } });
https
  .createServer({ cert: readFileSync(cert!), key: readFileSync(key!) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => mode === 'parse' && chunks.push(c));
    req.on('end', () => {
      let reply = fixed;
      if (mode === 'parse') {
        try {
          const uid = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } }).request?.uid;
          reply = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } });
        } catch {
          res.writeHead(400).end();
          return;
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    });
  })
  .listen(Number(port), '127.0.0.1');
