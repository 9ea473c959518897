// bench/admission: CPU time per AdmissionReview and requests/s of spec-guard's /validate
// (untrusted spec change, denied) and /mutate (trusted write, stamped), side by side with a
// bare Node HTTPS server that parses the body and answers a fixed allow, the same server doing
// the least a guard's answer needs (compare the spec; hash and sign it), and a minimal Go
// webhook (bench/go-webhook: encoding/json into maps, reflect.DeepEqual of spec). Same
// machine, same TLS, same 25 KB Application, 16 keep-alive connections; the servers take
// turns, round after round, so that a noisy neighbour hits all of them alike. The figure
// that holds on a busy machine is the server process's CPU time divided by its requests.
// Then the Node.js servers once more, loaded all at the same time beside a second bare server
// (a control: the method's own spread), and trusted writes during a flood of forged reviews.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createCA, createServingCert, type KeyPair } from '../src/certs/index.js';
import { buildGoWebhook, GO_TRUSTED_USER } from './go-peer.js';
import { createClientCert } from './client-cert.js';
import { answers } from './cluster.js';
import { cpuPerRequestAtOnce } from './at-once.js';
import { median, roundRatios } from './round-ratios.js';
import { processCpuMicros, threadCpuMicros } from './process-cpu.js';
import { barChart, savePicture } from './svg.js';
import { residentMb, SHIPPED_OPTIONS, shippedFlags } from './shipped-options.js';
import { benchConfig, workload } from './workload.js';

const SECONDS = Number(process.env.BENCH_DURATION ?? 4);
/** Five rounds: the ratio's spread between runs was ±0.1× with three, as large as the gaps to the targets. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 16;
/** Other Node.js options for spec-guard, each a row beside the shipped ones, separated by "|" (BENCH_NODE_OPTIONS). */
const VARIANTS = (process.env.BENCH_NODE_OPTIONS ?? '').split('|').filter(Boolean);


const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
/** Index of the bare server doing the least guard work; spec-guard's servers follow it. */
const LEAST = 2;
const bare = fileURLToPath(new URL('./bare-server.js', import.meta.url));

async function start(command: string, args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${command} ${args.join(' ')}`);
    if (await answers(port)) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`server did not answer on port ${port}`);
}

interface Sample {
  cpuMicrosPerRequest: number;
  /** Of that, V8's helper threads (the collector's parallel and concurrent work, the compiler): what garbage costs beyond the main thread's pauses. */
  helperMicrosPerRequest: number;
  rps: number;
  p99: number;
  errors: number;
}

async function sample(child: ChildProcess, port: number, path: string, body: string, client: KeyPair): Promise<Sample> {
  const cpuBefore = processCpuMicros(child.pid!);
  const helpersBefore = v8HelperMicros(child.pid!);
  const result = await autocannon({
    url: `https://127.0.0.1:${port}${path}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    tlsOptions: client,
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  const cpu = processCpuMicros(child.pid!) - cpuBefore;
  const requests = Math.max(1, result.requests.total);
  return {
    cpuMicrosPerRequest: cpu / requests,
    helperMicrosPerRequest: (v8HelperMicros(child.pid!) - helpersBefore) / requests,
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

/** CPU so far of V8's helper threads of a Node.js process (none in the Go webhook). */
const v8HelperMicros = (pid: number): number => threadCpuMicros(pid).get('V8Worker') ?? 0;

/** Server `i`'s CPU per review over server `j`'s, paired by round (the two ran one after the other). */
const pairedRatios = (samples: Sample[][], i: number, j: number) => roundRatios(samples.map((rounds) => rounds.map((x) => x.cpuMicrosPerRequest)), i, j);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-'));
  const ca = createCA();
  const tls = createServingCert(ca, ['127.0.0.1']);
  const crt = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  writeFileSync(crt, tls.cert);
  writeFileSync(key, tls.key);
  writeFileSync(join(dir, 'config.yaml'), benchConfig);
  // spec-guard checks the client certificate, as every shipped install does (the apiserver's
  // front-proxy certificate); the other servers ask for none, so theirs is never sent.
  const clientCa = join(dir, 'client-ca.crt');
  writeFileSync(clientCa, ca.cert);
  const apiserver = createClientCert(ca, 'front-proxy-client');
  const go = buildGoWebhook();
  const w = workload(25_000);

  const specGuard = (name: string, port: number, options: string) => ({
    name,
    port,
    command: process.execPath,
    args: [...shippedFlags(options), cli, 'serve', '--standalone', '--config', join(dir, 'config.yaml'), '--port', String(port), '--metrics-port', '0', '--bind-address', '127.0.0.1', '--tls-cert-file', crt, '--tls-key-file', key, '--client-ca-file', clientCa, '--log-level', 'warn'],
  });
  // spec-guard runs with the shipped Node.js options (manifests/), the bare server with Node's
  // defaults: the floor. Other options for spec-guard are compared in rows of their own.
  const servers = [
    { name: 'bare Node (parse, allow)', port: 19444, command: process.execPath, args: [bare, 'parse', crt, key, '19444'] },
    { name: 'minimal Go webhook', port: 19446, command: go, args: [crt, key, '127.0.0.1:19446', GO_TRUSTED_USER] },
    { name: 'bare Node, least guard work', port: 19443, command: process.execPath, args: [bare, 'least', crt, key, '19443'] },
    specGuard('spec-guard', 19445, SHIPPED_OPTIONS),
    ...VARIANTS.map((options, i) => specGuard(`spec-guard, ${options}`, 19447 + i, options)),
  ];
  const cases = [
    { name: '/validate untrusted change', path: '/validate', body: w.untrustedUpdate, target: 1.3 },
    { name: '/mutate trusted write', path: '/mutate', body: w.trustedUpdate, target: 1.5 },
  ];
  const children = await Promise.all(servers.map((s) => start(s.command, s.args, s.port)));
  try {
    console.log(
      `bench/admission: Application of ${w.objectBytes} bytes (AdmissionReview ${w.untrustedUpdate.length} bytes), HTTPS keep-alive, ` +
        `${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s per server and case; medians, ratios paired by round; spec-guard with NODE_OPTIONS=${SHIPPED_OPTIONS} and client authentication (shipped; each connection presents the apiserver's certificate)`,
    );
    console.log(`${'case'.padEnd(28)} | ${'server'.padEnd(24)} | CPU µs/review | of it V8 helpers |  req/s | p99 ms | errors`);
    const groups: Array<{ label: string; bars: Array<{ label: string; value: number }> }> = [];
    for (const c of cases) {
      const samples: Sample[][] = servers.map(() => []);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, server] of servers.entries()) samples[i]!.push(await sample(children[i]!, server.port, c.path, c.body, apiserver));
      }
      const cpu = samples.map((s) => median(s.map((x) => x.cpuMicrosPerRequest)));
      servers.forEach((server, i) => {
        const s = samples[i]!;
        const errors = s.reduce((n, x) => n + x.errors, 0);
        console.log(
          `${c.name.padEnd(28)} | ${server.name.padEnd(Math.max(24, ...servers.map((x) => x.name.length)))} | ${cpu[i]!.toFixed(0).padStart(13)} | ${median(s.map((x) => x.helperMicrosPerRequest)).toFixed(0).padStart(16)} | ${median(s.map((x) => x.rps)).toFixed(0).padStart(6)} | ${String(median(s.map((x) => x.p99))).padStart(6)} | ${errors}`,
        );
      });
      const f = (x: number) => x.toFixed(2);
      const least = pairedRatios(samples, LEAST, 0);
      console.log(`  → the least guard work (${c.path === '/mutate' ? 'serialize, hash and sign the spec' : 'compare the spec with the old one'}) alone: ${f(least.median)}× the bare server (${f(least.min)}–${f(least.max)})`);
      for (let i = LEAST + 1; i < servers.length; i++) {
        const bare = pairedRatios(samples, i, 0);
        const verdict = bare.median <= c.target ? 'met' : 'NOT met';
        console.log(
          `  → ${servers[i]!.name} CPU per review: ${f(bare.median)}× the bare server (median of ${ROUNDS} paired rounds, ${f(bare.min)}–${f(bare.max)}; target ≤ ${c.target}×: ${verdict}), ` +
            `${f(pairedRatios(samples, i, LEAST).median)}× the least guard work, ${f(pairedRatios(samples, i, 1).median)}× the Go webhook`,
        );
      }
      groups.push({ label: `${c.name} (spec-guard ${f(pairedRatios(samples, LEAST + 1, 0).median)}× bare)`, bars: servers.map((server, i) => ({ label: server.name, value: cpu[i]! })) });
    }
    await atOnceSection(
      servers.map((server, i) => ({ name: server.name, port: server.port, pid: children[i]!.pid! })),
      cases,
      { name: 'bare Node, again (control)', port: 19442, command: process.execPath, args: [bare, 'parse', crt, key, '19442'] },
      apiserver,
    );
    console.log(`peak RSS after the rounds: ${servers.map((server, i) => `${server.name} ${residentMb(children[i]!.pid!, 'VmHWM').toFixed(0)} MiB`).join(', ')}`);
    console.log(`picture: ${savePicture('admission-cpu.svg', barChart(`bench:admission, CPU µs per review (${w.objectBytes}-byte Application, medians of ${ROUNDS} rounds)`, 'CPU µs per review', groups))}`);
    await floodSection(servers[LEAST + 1]!.port, w.trustedUpdate, w.untrustedUpdate, apiserver);
  } finally {
    children.forEach((c) => c.kill());
  }
}

/** Connections of each server's own load generator when all are loaded at once (five servers or so on two cores). */
const CONNECTIONS_AT_ONCE = 4;

/**
 * The same cases with the Node.js servers loaded at the same time (bench/at-once.ts), beside a
 * second bare server (`control`) whose ratio to the first is the method's own spread. The Go
 * webhook sits this out: at 4–6 times a Node server's CPU per review it would take the cores.
 */
async function atOnceSection(
  servers: Array<{ name: string; port: number; pid: number }>,
  cases: Array<{ name: string; path: string; body: string; target: number }>,
  control: { name: string; port: number; command: string; args: string[] },
  client: KeyPair,
): Promise<void> {
  const again = await start(control.command, control.args, control.port);
  try {
    const specGuards = servers.slice(LEAST + 1);
    const loaded = [servers[0]!, { name: control.name, port: control.port, pid: again.pid! }, servers[LEAST]!, ...specGuards];
    console.log(`\nat once: the Node.js servers loaded together, each by its own ${CONNECTIONS_AT_ONCE} connections, ${ROUNDS} rounds of ${SECONDS} s; CPU per review over the bare server's in the same round (median, range)`);
    for (const c of cases) {
      const samples = await cpuPerRequestAtOnce(loaded, c.path, c.body, ROUNDS, SECONDS, CONNECTIONS_AT_ONCE, client);
      const f = (x: number) => x.toFixed(2);
      const rows = loaded.slice(1).map((server, k) => {
        const r = roundRatios(samples, k + 1, 0);
        const verdict = specGuards.includes(server) ? ` (target ≤ ${c.target}×: ${r.median <= c.target ? 'met' : 'NOT met'})` : '';
        return `${server.name} ${f(r.median)}× (${f(r.min)}–${f(r.max)})${verdict}`;
      });
      console.log(`  ${c.name}: bare ${median(samples[0]!).toFixed(0)} µs per review; ${rows.join('; ')}`);
    }
  } finally {
    again.kill();
  }
}

/**
 * Trusted writes during a flood: the agent's /mutate at a steady 200 req/s, alone and while
 * 32 connections post ~2.5 MB forged reviews to /validate as fast as they can. They present
 * the apiserver's certificate too (the worst case: without it each is refused with 401 before
 * its body is read), so that the large-review budget is what holds them off.
 */
async function floodSection(port: number, trusted: string, untrusted: string, client: KeyPair): Promise<void> {
  const forged = JSON.parse(untrusted);
  forged.request.object.spec.padding = 'x'.repeat(2_500_000);
  const flood = JSON.stringify(forged);
  const steady = () =>
    autocannon({ url: `https://127.0.0.1:${port}/mutate`, method: 'POST', headers: { 'content-type': 'application/json' }, body: trusted, tlsOptions: client, connections: 4, overallRate: 200, duration: SECONDS * 2 });
  const alone = await steady();
  const [during, flooding] = await Promise.all([
    steady(),
    autocannon({ url: `https://127.0.0.1:${port}/validate`, method: 'POST', headers: { 'content-type': 'application/json' }, body: flood, tlsOptions: client, connections: 32, duration: SECONDS * 2 }),
  ]);
  console.log(`\ntrusted /mutate at 200 req/s, spec-guard, ${SECONDS * 2} s: p50 / p99 / max ms`);
  console.log(`  alone:                              ${alone.latency.p50} / ${alone.latency.p99} / ${alone.latency.max}, errors ${alone.errors + alone.non2xx + alone.timeouts}`);
  console.log(
    `  with 32 connections of 2.5 MB forged reviews: ${during.latency.p50} / ${during.latency.p99} / ${during.latency.max}, errors ${during.errors + during.non2xx + during.timeouts}` +
      ` (flood: ${flooding.requests.total} sent, ${flooding['2xx']} answered 200, ${flooding.non2xx} refused with 429/503)`,
  );
}

await main();
