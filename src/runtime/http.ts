import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`${what}: cannot listen on ${host}:${port}: ${err.message}`)));
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

/** Closes `server` once its in-flight requests are answered (at most `graceMs`, then closes every connection). */
export function drain(server: Server, graceMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
    // Keep-alive connections become idle as their last response goes out: close them
    // then, so that close() completes as soon as the in-flight requests are answered.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(force);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
