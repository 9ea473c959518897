// bench/admission: requests/s and p50/p99 latency of spec-guard's /validate and /mutate
// against a bare Node HTTPS server that answers a fixed allow, in one run, same machine,
// same TLS, same 20 KB body, keep-alive. Each server runs in its own process; the load
// generator (autocannon) runs in this one.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createCA, createServingCert } from '../src/certs/index.js';
import { benchConfig, workload } from './workload.js';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
const CONNECTIONS = 16;
const RATE = 1000;

const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const bare = fileURLToPath(new URL('./bare-server.js', import.meta.url));

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/healthz', method: 'POST', rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.end();
  });

/** Starts a server process and waits until its port answers over TLS. */
async function start(args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${args.join(' ')}`);
    if (await answers(port)) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`server did not answer on port ${port}`);
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(port: number, path: string, body: string, rate?: number): Promise<Figures> {
  const result = await autocannon({
    url: `https://127.0.0.1:${port}${path}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: rate ? 8 : CONNECTIONS,
    duration: DURATION_S,
    ...(rate ? { overallRate: rate } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-'));
  const ca = createCA();
  const tls = createServingCert(ca, ['127.0.0.1']);
  writeFileSync(join(dir, 'tls.crt'), tls.cert);
  writeFileSync(join(dir, 'tls.key'), tls.key);
  writeFileSync(join(dir, 'config.yaml'), benchConfig);
  const w = workload(20_000);

  const cases = [
    { name: '/validate (untrusted spec change, denied)', path: '/validate', body: w.untrustedUpdate },
    { name: '/mutate (trusted update, stamped)', path: '/mutate', body: w.trustedUpdate },
  ];
  const crt = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  const servers = [
    { name: 'bare: fixed allow', port: 19443, args: [bare, 'fixed', crt, key, '19443'] },
    { name: 'bare: JSON.parse', port: 19444, args: [bare, 'parse', crt, key, '19444'] },
    {
      name: 'spec-guard',
      port: 19445,
      args: [cli, 'serve', '--standalone', '--config', join(dir, 'config.yaml'), '--port', '19445', '--metrics-port', '0', '--bind-address', '127.0.0.1', '--tls-cert-file', crt, '--tls-key-file', key, '--log-level', 'warn'],
    },
  ];
  const children = await Promise.all(servers.map((s) => start(s.args, s.port)));
  try {
    console.log(
      `bench/admission: Application of ${w.objectBytes} bytes (AdmissionReview ${w.untrustedUpdate.length} bytes), HTTPS keep-alive, ` +
        `${DURATION_S} s per run, ${CONNECTIONS} connections at full load, load generator in this process`,
    );
    console.log(`${'case'.padEnd(43)} | ${'server'.padEnd(17)} | full req/s | p50 ms | p99 ms | @${RATE}/s p50 ms | p99 ms | errors`);
    for (const c of cases) {
      const results: Array<{ full: Figures; rate: Figures }> = [];
      for (const server of servers) {
        const full = await load(server.port, c.path, c.body);
        const rate = await load(server.port, c.path, c.body, RATE);
        results.push({ full, rate });
        console.log(
          `${c.name.padEnd(43)} | ${server.name.padEnd(17)} | ${full.rps.toFixed(0).padStart(10)} | ${String(full.p50).padStart(6)} | ${String(full.p99).padStart(6)} | ${String(rate.p50).padStart(14)} | ${String(rate.p99).padStart(6)} | ${full.errors + rate.errors}`,
        );
      }
      const [fixed, parse, guard] = results as [typeof results[0], typeof results[0], typeof results[0]];
      const pct = (a: Figures, b: Figures) => `${((a.rps / b.rps) * 100).toFixed(0)}%`;
      console.log(
        `  → spec-guard throughput: ${pct(guard.full, fixed.full)} of the fixed-allow server, ${pct(guard.full, parse.full)} of the parsing one (target ≥ 70%); ` +
          `p99 at ${RATE} req/s: ${guard.rate.p99} ms (target < 5 ms)`,
      );
    }
  } finally {
    children.forEach((c) => c.kill());
  }
}

await main();
