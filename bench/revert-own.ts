// bench/revert-own: a revert's CPU in the reverter's own process, the apiserver out of the way.
// bench/revert measures through a real kube-apiserver and etcd, which take both of the
// machine's cores in a burst: the reverters' CPU per revert then follows the hour (1.6–3.0 ms for
// spec-guard in one evening, round 30) more than any change to them. Here a stand-in apiserver
// (bench/fake-apiserver.ts: list, watch, JSON patches, Events over HTTPS, a few µs of work per
// call) serves BENCH_BURST Applications of ~5 KB, each stamped by the source of truth, and
// drifts them all at once, twice per reverter (its first burst, and 6 s later the second);
// the reverters take turns, BENCH_CYCLES times:
//   spec-guard            its Watcher, Repairer and EventRecorder as `serve` builds them
//                         (bench/watcher-alone.ts), the shipped Node.js options, logs at info
//   bare Node.js          bench/bare-reverter.ts (parse every event, one PATCH and one Event per
//                         drift), with Node's defaults and with the shipped heap options
//   Go                    bench/go-reverter, the same work in Go
// BENCH_BUILDS='label=/path/to/dist|…' adds other builds of spec-guard (their compiled
// dist/ folders) to the turns, to compare a change with the build before it in one run;
// BENCH_NODE_OPTIONS='options|…' adds spec-guard run with other Node.js options.
// Figures: CPU ms per revert of the reverter's process (all threads, from the drift to 3 s after
// the last revert), and each drift's time from its watch event written to its revert received.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, closeSync, mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCA, createServingCert } from '../src/certs/index.js';
import { createClientCert } from './client-cert.js';
import { freePort, percentile, sleep } from './cluster.js';
import { buildGoReverter, firstLine } from './go-peer.js';
import { cpuByThread, processCpuMicros, threadCpuMicros } from './process-cpu.js';
import { shippedFlags, SHIPPED_OPTIONS } from './shipped-options.js';
import { median } from './round-ratios.js';
import { barChart, savePicture } from './svg.js';

const BURST = Number(process.env.BENCH_BURST ?? 1000);
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);
if (!Number.isInteger(CYCLES) || CYCLES < 1) throw new Error(`BENCH_CYCLES must be a whole number of at least 1, not "${process.env.BENCH_CYCLES}"`);
/** Counted after the last revert: the Events a burst leaves to write. */
const AFTER_BURST_MS = 3000;
const BETWEEN_BURSTS_MS = 6000;
/** A burst not reverted in this time is a failed run, not a slow one. */
const BURST_TIMEOUT_MS = 120_000;
/** Other Node.js options for spec-guard, taking turns with the shipped ones (BENCH_NODE_OPTIONS). */
const OTHER_OPTIONS = (process.env.BENCH_NODE_OPTIONS ?? '').split('|').filter(Boolean);
/** Other builds of spec-guard taking turns with this one: label and dist/ folder (BENCH_BUILDS). */
const OTHER_BUILDS = (process.env.BENCH_BUILDS ?? '')
  .split('|')
  .filter(Boolean)
  .map((build) => {
    const at = build.indexOf('=');
    if (at < 1) throw new Error(`BENCH_BUILDS takes label=/path/to/dist entries separated by "|", not "${build}"`);
    return [build.slice(0, at), build.slice(at + 1)] as const;
  });
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

interface Reverter {
  name: string;
  command: string;
  args: string[];
}

interface Burst {
  cpuMsPerRevert: number;
  byThread: string;
  latencies: number[];
  /** The calls it made of the apiserver, per revert. */
  calls: string;
}

/** A call to the fake apiserver's control paths (bench/fake-apiserver.ts): its JSON answer. */
function control<T>(port: number, ca: string, method: string, path: string, body = ''): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path, method, ca, timeout: BURST_TIMEOUT_MS, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as T) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${BURST_TIMEOUT_MS / 1000} s (a burst of ${BURST} drifts not reverted?)`)));
    req.on('error', reject);
    req.end(body);
  });
}

type Calls = Record<string, { count: number; bytes: number }>;

/** The calls a burst made, per revert: `PATCH application 1.00 (71 B)`, … */
function callsPerRevert(before: Calls, after: Calls): string {
  return Object.entries(after)
    .map(([kind, { count, bytes }]) => [kind, count - (before[kind]?.count ?? 0), bytes - (before[kind]?.bytes ?? 0)] as const)
    .filter(([, count]) => count > 0)
    .map(([kind, count, bytes]) => `${kind} ${(count / BURST).toFixed(2)} (${Math.round(bytes / count)} B)`)
    .join(', ');
}

async function burst(port: number, ca: string, pid: number, revision: string): Promise<Burst> {
  const calls = await control<Calls>(port, ca, 'GET', '/bench/calls');
  const cpu = processCpuMicros(pid);
  const threads = threadCpuMicros(pid);
  const { latencies } = await control<{ latencies: number[] }>(port, ca, 'POST', '/bench/drift', JSON.stringify({ revision }));
  await sleep(AFTER_BURST_MS);
  const measured = { cpuMsPerRevert: (processCpuMicros(pid) - cpu) / 1000 / BURST, byThread: cpuByThread(threads, threadCpuMicros(pid), BURST), latencies };
  return { ...measured, calls: callsPerRevert(calls, await control<Calls>(port, ca, 'GET', '/bench/calls')) };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-revert-own-'));
  const ca = createCA();
  const serving = createServingCert(ca, ['127.0.0.1']);
  const client = createClientCert(ca, 'spec-guard');
  const file = (name: string, content: string | Buffer) => {
    writeFileSync(join(dir, name), content);
    return join(dir, name);
  };
  const files = { ca: file('ca.crt', ca.cert), cert: file('tls.crt', serving.cert), key: file('tls.key', serving.key), clientCert: file('client.crt', client.cert), clientKey: file('client.key', client.key), stampKey: file('stamp.key', randomBytes(32)) };
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const kubeconfig = file(
    'kubeconfig',
    `apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: ${server}\n    certificate-authority-data: ${b64(ca.cert)}\nusers:\n- name: spec-guard\n  user:\n    client-certificate-data: ${b64(client.cert)}\n    client-key-data: ${b64(client.key)}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: spec-guard\ncurrent-context: fake\n`,
  );
  const peerArgs = [server, files.ca, files.clientCert, files.clientKey, 'argocd'];
  const reverters: Reverter[] = [
    { name: 'spec-guard', command: process.execPath, args: [...shippedFlags(), here('./watcher-alone.js'), kubeconfig, files.stampKey] },
    { name: 'bare Node.js', command: process.execPath, args: [here('./bare-reverter.js'), ...peerArgs] },
    { name: 'bare Node.js, shipped heap', command: process.execPath, args: [...shippedFlags(), here('./bare-reverter.js'), ...peerArgs] },
    { name: 'Go', command: buildGoReverter(), args: peerArgs },
    ...OTHER_OPTIONS.map((options) => ({ name: `spec-guard, ${options}`, command: process.execPath, args: [...shippedFlags(options), here('./watcher-alone.js'), kubeconfig, files.stampKey] })),
    ...OTHER_BUILDS.map(([label, dist]) => ({ name: `spec-guard, ${label}`, command: process.execPath, args: [...shippedFlags(), join(dist, 'bench', 'watcher-alone.js'), kubeconfig, files.stampKey] })),
  ];
  const fake = spawn(process.execPath, [here('./fake-apiserver.js'), files.cert, files.key, String(port), files.stampKey, String(BURST)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const results = new Map<string, { first: Burst[]; second: Burst[] }>(reverters.map((r) => [r.name, { first: [], second: [] }]));
  try {
    await firstLine(fake, 'the fake apiserver');
    console.log(
      `bench/revert-own: ${BURST} Applications of ~5 KB drifted at once, twice per reverter (its first burst; the second ${BETWEEN_BURSTS_MS / 1000} s later), against a stand-in apiserver (bench/fake-apiserver); ` +
        `${CYCLES} cycles of turns; CPU of the reverter's process from the drift to ${AFTER_BURST_MS / 1000} s after the last revert; spec-guard with NODE_OPTIONS=${SHIPPED_OPTIONS}`,
    );
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      for (const r of reverters) {
        const logFile = join(dir, `${r.name.replace(/\W+/g, '-')}-${cycle}.log`);
        const log = openSync(logFile, 'w');
        const child = spawn(r.command, r.args, { stdio: ['ignore', 'pipe', log] });
        closeSync(log);
        try {
          await firstLine(child, r.name);
          await sleep(1000);
          const first = await burst(port, ca.cert, child.pid!, `drift-${cycle}-${r.name}-1`);
          await sleep(BETWEEN_BURSTS_MS - AFTER_BURST_MS);
          const second = await burst(port, ca.cert, child.pid!, `drift-${cycle}-${r.name}-2`);
          results.get(r.name)!.first.push(first);
          results.get(r.name)!.second.push(second);
          const line = (b: Burst) => `${b.cpuMsPerRevert.toFixed(2)} ms (${b.byThread}), reverted p50 ${percentile(b.latencies, 50).toFixed(0)} / p99 ${percentile(b.latencies, 99).toFixed(0)} ms`;
          console.log(`  cycle ${cycle}, ${r.name.padEnd(26)} first ${line(first)}; second ${line(second)}`);
          if (cycle === 1) console.log(`    calls per revert: ${first.calls}`);
        } finally {
          child.kill('SIGKILL');
          await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
        }
      }
    }
    const bare = results.get('bare Node.js')!;
    console.log('CPU ms per revert, medians of the cycles (first / second burst), and against the bare Node.js reverter:');
    for (const [name, r] of results) {
      const first = median(r.first.map((b) => b.cpuMsPerRevert));
      const second = median(r.second.map((b) => b.cpuMsPerRevert));
      const ratio = (x: number, of: Burst[]) => (x / median(of.map((b) => b.cpuMsPerRevert))).toFixed(2);
      console.log(`  ${name.padEnd(26)} ${first.toFixed(2)} / ${second.toFixed(2)} ms  (${ratio(first, bare.first)}× / ${ratio(second, bare.second)}×)${name === 'spec-guard' ? `  target ≤ 1 ms: ${first <= 1 && second <= 1 ? 'met' : 'not met'}` : ''}`);
    }
    const bars = (pick: (r: { first: Burst[]; second: Burst[] }) => Burst[]) => [...results].map(([label, r]) => ({ label, value: median(pick(r).map((b) => b.cpuMsPerRevert)) * 1000 }));
    const picture = barChart(`bench:revert-own: CPU per revert, bursts of ${BURST}, a stand-in apiserver`, 'CPU µs per revert', [
      { label: "a process's first burst", bars: bars((r) => r.first) },
      { label: 'the same objects again, 6 s later', bars: bars((r) => r.second) },
    ]);
    console.log(`picture: ${savePicture('revert-own-cpu.svg', picture)}`);
  } finally {
    fake.kill('SIGKILL');
  }
}

await main();
