import http from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { parse } from 'yaml';
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
  /**
   * Called once the request is written to its connection: after any wait for one of the
   * pool's connections, which is this process's wait, not the apiserver's.
   */
  onSent?: () => void;
  /** Extra request headers (e.g. Impersonate-User; a list for a repeated one, Impersonate-Group). */
  headers?: Record<string, string | string[]>;
  /**
   * The caller does not read a successful answer (a revert's PATCH is answered with the whole
   * object, an Event's POST with the Event): it is asked for as metadata only, not parsed, and
   * the call resolves with undefined. A failure's Status is read as always.
   */
  discardResponse?: boolean;
}

/**
 * What a call whose answer is discarded accepts: the object's metadata alone, else (a server
 * that cannot transform) the whole object. The apiserver then encodes and sends about 0.8 KB
 * instead of the whole object (5 KB and more for an Application), for every revert and Event.
 */
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json';

/**
 * A thin REST client over a kubeconfig. client-node supplies authentication; requests
 * are made here so JSON patches and long watches are under our control (client-node's
 * informers can stall silently).
 */
/** A request body as sent: text as is, anything else as JSON. */
const bodyText = (body: unknown): string => (typeof body === 'string' ? body : JSON.stringify(body));

/**
 * Where calls go, parsed once: the server's host, port and path prefix (an apiserver behind a
 * proxy, as `https://rancher.example/k8s/clusters/c-1`, is served under that prefix).
 */
interface Target {
  transport: typeof http | typeof https;
  hostname: string;
  port: number;
  prefix: string;
}

function targetOf(server: string): Target {
  const url = new URL(server);
  const secure = url.protocol === 'https:';
  // An IPv6 literal's brackets belong to the URL, not to the address.
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { transport: secure ? https : http, hostname, port: Number(url.port) || (secure ? 443 : 80), prefix: url.pathname.replace(/\/+$/, '') };
}

/** `path` under the server's prefix, with the query's defined members, percent-encoded. */
function requestPath(prefix: string, path: string, query: Record<string, string | undefined> | undefined): string {
  let search = '';
  for (const key in query) {
    const value = query[key];
    if (value !== undefined) search += `${search ? '&' : '?'}${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
  }
  return prefix + path + search;
}

const succeeded = (status: number) => status >= 200 && status < 300;

/** What a call got back: status, headers and the body's bytes (undefined when none were kept). */
interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer | undefined;
}

export class KubeClient {
  private readonly target: Target;
  /** Calls: at most REQUEST_SOCKETS connections at once; more wait for one. */
  private readonly agent: http.Agent;
  /** Watches: one connection each for as long as it runs, never taken from the calls' pool. */
  private readonly watchAgent: http.Agent;
  /** What every request carries: the TLS context and checks, the kubeconfig's headers (never the key material itself). */
  private readonly requestOptions: https.RequestOptions;
  private credentials: { headers: Record<string, string>; readAt: number } | undefined;
  /** Set by a 401: the next call reads the credentials afresh. */
  private stale = false;

  private constructor(
    readonly kubeConfig: KubeConfig,
    base: https.RequestOptions,
    /** A file the bearer token is read from (in-cluster, or a kubeconfig's `tokenFile`). */
    private readonly tokenFile: string | undefined,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.target = targetOf(cluster.server);
    const secure = this.target.transport === https;
    // The CA, certificate and key go in one TLS context made here, not in the options: an agent
    // names its connection pool by every TLS option of a request (ca, cert and key included:
    // 5 KB of text with a client certificate), several times per call, and hashes the name anew
    // each time: 25-45 µs of CPU per call (docs/decisions.md, "Kubernetes access").
    const tls = secure ? { secureContext: createSecureContext({ ca: base.ca, cert: base.cert, key: base.key }), rejectUnauthorized: base.rejectUnauthorized, servername: base.servername } : {};
    const agent = (maxSockets: number) => (secure ? new https.Agent({ ...tls, keepAlive: true, maxSockets }) : new http.Agent({ keepAlive: true, maxSockets }));
    this.requestOptions = { ...tls, headers: base.headers };
    this.agent = agent(REQUEST_SOCKETS);
    // Their number is set by the configuration (one per watched resource and namespace).
    this.watchAgent = agent(Infinity);
  }

  static async fromKubeConfig(kc: KubeConfig, tokenFile?: string): Promise<KubeClient> {
    const base: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(base);
    const { authorization: _a, Authorization: _b, ...rest } = (base.headers ?? {}) as Record<string, string>;
    base.headers = rest;
    return new KubeClient(kc, base, tokenFile ?? tokenFileOf(kc));
  }

  /** Loads `file`, or in-cluster / $KUBECONFIG / ~/.kube/config when omitted. */
  static async load(file?: string): Promise<KubeClient> {
    const kc = new KubeConfig();
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
    const source = file ?? (process.env.KUBECONFIG && !process.env.KUBECONFIG.includes(delimiter) ? process.env.KUBECONFIG : undefined);
    return KubeClient.fromKubeConfig(kc, source ? kubeconfigTokenFile(source, kc) : undefined);
  }

  /**
   * The credential headers, read afresh every CREDENTIAL_REFRESH_MS and after a 401, as
   * client-go does: a projected service-account token is rotated by the kubelet, an exec
   * plugin's credential expires (client-node caches it until then).
   */
  private async authHeaders(): Promise<Record<string, string>> {
    if (this.credentials && !this.stale && Date.now() - this.credentials.readAt < CREDENTIAL_REFRESH_MS) return this.credentials.headers;
    this.stale = false;
    let headers: Record<string, string>;
    if (this.tokenFile) {
      headers = { authorization: `Bearer ${readFileSync(this.tokenFile, 'utf8').trim()}` };
    } else {
      const opts: https.RequestOptions = { headers: {} };
      await this.kubeConfig.applyToHTTPSOptions(opts);
      const all = opts.headers as Record<string, string>;
      const value = all.Authorization ?? all.authorization;
      headers = value ? { authorization: value } : {};
    }
    this.credentials = { headers, readAt: Date.now() };
    return headers;
  }

  private async open(method: string, path: string, options: RequestOptions, body?: string, agent = this.agent): Promise<http.ClientRequest> {
    const headers: Record<string, string | string[]> = { ...(this.requestOptions.headers as Record<string, string>), ...(await this.authHeaders()), accept: options.discardResponse ? METADATA_ONLY : 'application/json', ...options.headers };
    if (body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      // Node frames a DELETE body neither as chunks nor by length unless told: the apiserver
      // would read it as the start of the next request on the kept-alive connection.
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const { transport, hostname, port, prefix } = this.target;
    // Host, port and path as options: no URL is parsed per call (a quarter of a call's set-up in a profile of reverts).
    const target = { hostname, port, path: requestPath(prefix, path, options.query) };
    return transport.request({ ...this.requestOptions, ...target, method, headers, agent, signal: options.signal, timeout: options.timeoutMs });
  }

  /** One API call; resolves with the parsed JSON body, rejects with KubeError. A 401 re-reads the credentials and tries once more. */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    try {
      return await this.once<T>(method, path, options);
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 401)) throw err;
      this.stale = true;
      return this.once<T>(method, path, options);
    }
  }

  private async once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const payload = options.body === undefined ? undefined : bodyText(options.body);
    const { status, headers, body: bytes } = await this.exchange(method, path, options, payload);
    options.onHeaders?.(headers);
    if (options.discardResponse && succeeded(status)) return undefined as T;
    const text = bytes ? bytes.toString('utf8') : '';
    let body: unknown;
    try {
      body = text ? parseJson(text) : undefined;
    } catch {
      body = undefined;
    }
    if (succeeded(status)) return body as T;
    const st = body as { reason?: string; message?: string } | undefined;
    throw new KubeError(status, st?.reason ?? 'Unknown', `${method} ${path}: ${status} ${st?.message ?? text.slice(0, 200)}`);
  }

  /** One call's exchange: its status, headers and body bytes (none kept for a discarded answer). */
  private async exchange(method: string, path: string, options: RequestOptions, payload: string | undefined): Promise<Answer> {
    const req = await this.open(method, path, options, payload);
    return new Promise<Answer>((resolve, reject) => {
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out after ${options.timeoutMs} ms`)));
      req.on('error', reject);
      if (options.onSent) req.once('finish', options.onSent);
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const keep = !(options.discardResponse && succeeded(status));
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => keep && chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status, headers: res.headers, body: chunks.length ? Buffer.concat(chunks) : undefined }));
      });
      req.end(payload);
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
    return this.open('GET', path, { query, signal, headers }, undefined, this.watchAgent).then((req) => new Promise<void>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        if ((res.statusCode ?? 0) >= 300) {
          res.resume();
          if (res.statusCode === 401) this.stale = true;
          reject(new KubeError(res.statusCode ?? 0, 'WatchFailed', `watch ${path}: HTTP ${res.statusCode}`));
          return;
        }
        // The start of a line whose end has not come yet. Newlines are looked for in each chunk
        // alone: searching a growing buffer copied all of it at every chunk (a 1 MB object in
        // 64 KB chunks: 8 MB copied), and a line within one chunk is parsed where it lies.
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          let from = 0;
          let nl: number;
          try {
            while ((nl = chunk.indexOf('\n', from)) >= 0) {
              const line = partial + chunk.slice(from, nl);
              partial = '';
              from = nl + 1;
              if (line.trim()) onLine(parseJson(line));
            }
            partial += from === 0 ? chunk : chunk.slice(from);
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
    }));
  }

  /**
   * Keeps `count` of the calls' connections open through quiet spells: every `everyMs` while
   * no call is in flight, `count` GET /version at once, each on a connection of its own. The
   * apiserver closes a connection idle for 90 s; a burst of reverts after a quiet spell then
   * opened its 64 connections against an apiserver the drifts saturate, and waited for them
   * (docs/decisions.md, "Kubernetes access"). Returns the function that stops it.
   */
  keepConnectionsOpen(count: number, everyMs: number): () => void {
    const refresh = () => {
      // Calls in flight hold their connections open; warming beside them would take theirs.
      if (Object.values(this.agent.sockets).some((inUse) => inUse !== undefined && inUse.length > 0)) return;
      for (let i = 0; i < count; i++) void this.request('GET', '/version', { timeoutMs: everyMs / 2, discardResponse: true }).catch(() => undefined);
    };
    refresh();
    const timer = setInterval(refresh, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }
}

/**
 * Calls in flight at once, by caller: the watcher's repairs, Event writes, the lists of
 * namespaces that entered a selection, and the rest (lease renewals, layer checks, store
 * writes, each one call at a time). The pool holds every share: a burst's reverts never wait
 * for a connection behind the Events, nor a lease renewal behind the reverts (with one pool of
 * 64 for 64 repair slots and 4 Event writes, a revert's PATCH waited for a connection p99
 * 105-206 ms in a 1,000-drift burst, counted as the apiserver's).
 */
export const CALLS_IN_FLIGHT = { repairs: 64, events: 4, namespaceLists: 4, rest: 8 } as const;
/** Connections for calls: every caller's share (the apiserver, not this pool, sets the pace). */
export const REQUEST_SOCKETS = Object.values(CALLS_IN_FLIGHT).reduce((sum, share) => sum + share, 0);

/** How long credentials are used before they are read again (client-go re-reads token files every minute). */
const CREDENTIAL_REFRESH_MS = 60_000;

/** The token file client-node set up for in-cluster config (the service-account token). */
function tokenFileOf(kc: KubeConfig): string | undefined {
  const config = kc.getCurrentUser()?.authProvider?.config as { tokenFile?: string } | undefined;
  return config?.tokenFile;
}

/** kubectl's `tokenFile` of the current user, which client-node does not read (it would run anonymous). */
function kubeconfigTokenFile(file: string, kc: KubeConfig): string | undefined {
  try {
    const raw = parse(readFileSync(file, 'utf8')) as { users?: Array<{ name?: string; user?: { tokenFile?: string; token?: string } }> };
    const user = raw.users?.find((u) => u.name === kc.getCurrentUser()?.name)?.user;
    return user?.tokenFile && !user.token ? user.tokenFile : undefined;
  } catch {
    return undefined;
  }
}

export const isNotFound = (err: unknown) => err instanceof KubeError && err.status === 404;
export const isConflict = (err: unknown) => err instanceof KubeError && err.status === 409;
