import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { parseJson } from './json.js';

/** A failed API call: HTTP status and the apiserver's Status reason and message. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | undefined>;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Called with the response headers (e.g. for the apiserver's Date). */
  onHeaders?: (headers: http.IncomingHttpHeaders) => void;
  /** Extra request headers (e.g. Impersonate-User). */
  headers?: Record<string, string>;
}

/**
 * A thin REST client over a kubeconfig. client-node supplies authentication; requests
 * are made here so JSON patches and long watches are under our control (client-node's
 * informers can stall silently).
 */
export class KubeClient {
  private readonly server: URL;
  private readonly agent: http.Agent;

  private constructor(
    readonly kubeConfig: KubeConfig,
    private readonly base: https.RequestOptions,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    const secure = this.server.protocol === 'https:';
    this.agent = secure ? new https.Agent({ ca: base.ca, cert: base.cert, key: base.key, rejectUnauthorized: base.rejectUnauthorized, servername: base.servername, keepAlive: true, maxSockets: 32 }) : new http.Agent({ keepAlive: true });
  }

  static async fromKubeConfig(kc: KubeConfig): Promise<KubeClient> {
    const base: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(base);
    return new KubeClient(kc, base);
  }

  /** Loads `file`, or in-cluster / $KUBECONFIG / ~/.kube/config when omitted. */
  static async load(file?: string): Promise<KubeClient> {
    const kc = new KubeConfig();
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
    return KubeClient.fromKubeConfig(kc);
  }

  private open(method: string, path: string, options: RequestOptions): http.ClientRequest {
    const url = new URL(path, this.server);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const headers: Record<string, string> = { ...(this.base.headers as Record<string, string>), accept: 'application/json', ...options.headers };
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const transport = url.protocol === 'https:' ? https : http;
    return transport.request(url, { ...this.base, method, headers, agent: this.agent, signal: options.signal, timeout: options.timeoutMs });
  }

  /** One API call; resolves with the parsed JSON body, rejects with KubeError. */
  request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const req = this.open(method, path, options);
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out after ${options.timeoutMs} ms`)));
      req.on('error', reject);
      req.on('response', (res) => {
        options.onHeaders?.(res.headers);
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? parseJson(text) : undefined;
          } catch {
            body = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(body as T);
          const st = body as { reason?: string; message?: string } | undefined;
          reject(new KubeError(status, st?.reason ?? 'Unknown', `${method} ${path}: ${status} ${st?.message ?? text.slice(0, 200)}`));
        });
      });
      if (options.body !== undefined) req.write(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
      req.end();
    });
  }

  /**
   * A watch stream: calls `onLine` with each JSON event; resolves when the server ends
   * the stream, rejects on errors. Abort `signal` to stop.
   */
  stream(
    path: string,
    query: Record<string, string | undefined>,
    onLine: (event: unknown) => void,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const req = this.open('GET', path, { query, signal, headers });
      req.on('error', reject);
      req.on('response', (res) => {
        if ((res.statusCode ?? 0) >= 300) {
          res.resume();
          reject(new KubeError(res.statusCode ?? 0, 'WatchFailed', `watch ${path}: HTTP ${res.statusCode}`));
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          try {
            while ((nl = buffered.indexOf('\n')) >= 0) {
              const line = buffered.slice(0, nl);
              buffered = buffered.slice(nl + 1);
              if (line.trim()) onLine(parseJson(line));
            }
          } catch (err) {
            // A bad line or a handler that gives up ends this watch, not the process.
            req.destroy();
            reject(err);
          }
        });
        res.on('error', reject);
        res.on('end', () => resolve());
        res.on('aborted', () => reject(new Error(`watch ${path}: aborted`)));
      });
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export const isNotFound = (err: unknown) => err instanceof KubeError && err.status === 404;
export const isConflict = (err: unknown) => err instanceof KubeError && err.status === 409;
