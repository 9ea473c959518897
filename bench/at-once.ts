// Servers measured side by side at the same time: each has a load generator of its own and all
// of them run at once, round after round, so that whatever the machine's neighbours do in a
// round weighs on every server alike. Taking turns (bench/admission's rounds) pairs a server
// with the one run just before it: on this shared machine one round of a server stood at
// 0.8–2.3× the round before it. At once, two identical servers agree within a few percent,
// which is what the control row shows.
import autocannon from 'autocannon';
import type { KeyPair } from '../src/certs/index.js';
import { processCpuMicros } from './process-cpu.js';

export interface LoadedServer {
  name: string;
  port: number;
  pid: number;
}

/**
 * CPU µs per request of each server, one array per server, one value per round. `client`: the
 * certificate each connection presents (the apiserver's, to a server that asks for one).
 */
export async function cpuPerRequestAtOnce(servers: LoadedServer[], path: string, body: string, rounds: number, seconds: number, connections: number, client: KeyPair): Promise<number[][]> {
  const perServer: number[][] = servers.map(() => []);
  for (let round = 0; round < rounds; round++) {
    const before = servers.map((s) => processCpuMicros(s.pid));
    const results = await Promise.all(
      servers.map((s) =>
        autocannon({ url: `https://127.0.0.1:${s.port}${path}`, method: 'POST', headers: { 'content-type': 'application/json' }, body, tlsOptions: client, connections, duration: seconds }),
      ),
    );
    servers.forEach((s, i) => perServer[i]!.push((processCpuMicros(s.pid) - before[i]!) / Math.max(1, results[i]!.requests.total)));
  }
  return perServer;
}
