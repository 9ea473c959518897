import type { IncomingMessage } from 'node:http';
import { parseJson } from '../kube/index.js';

/** An HTTP error for the client: status code and a message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Slots for large bodies: `enterLarge` throws (429) when none is free. */
export interface LargeBodyBudget {
  /** A body larger than this needs a slot. */
  readonly largeBytes: number;
  enterLarge(): void;
  leaveLarge(): void;
}

/**
 * Resolve and reject functions that let go of the promise once one was called. The body's
 * listeners stay on the request, and the request stays alive with its keep-alive connection
 * until the next request on it: holding the promise, they held its value, the parsed review.
 * Each connection then kept its last review alive, and the collector copied and promoted
 * about two 25 KB reviews per scavenge (docs/benchmarks.md, round 20).
 */
function releasedOnceSettled(resolve: (value: unknown) => void, reject: (err: Error) => void) {
  let settle: { resolve: typeof resolve; reject: typeof reject } | undefined = { resolve, reject };
  return {
    resolve: (value: unknown) => {
      settle?.resolve(value);
      settle = undefined;
    },
    reject: (err: Error) => {
      settle?.reject(err);
      settle = undefined;
    },
  };
}

/**
 * Reads and parses a JSON body of at most `limit` bytes. Leaner than body-parser (no
 * charset decoding layers, no content-type negotiation): this is the admission hot path.
 */
export function readJsonBody(req: IncomingMessage, limit: number, large?: LargeBodyBudget): Promise<unknown> {
  return new Promise((resolvePromise, rejectPromise) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      rejectPromise(new HttpError(413, `body larger than ${limit} bytes`));
      return;
    }
    const { resolve, reject } = releasedOnceSettled(resolvePromise, rejectPromise);
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    let entered = false;
    const fail = (err: HttpError) => {
      failed = true;
      chunks.length = 0;
      if (entered) large!.leaveLarge();
      entered = false;
      req.resume();
      reject(err);
    };
    // A large body takes a slot of the large-review budget before it is read (or as soon as it turns out large).
    const enterLarge = (): boolean => {
      try {
        large!.enterLarge();
        entered = true;
        return true;
      } catch (err) {
        fail(err as HttpError);
        return false;
      }
    };
    if (large && declared > large.largeBytes && !enterLarge()) return;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) fail(new HttpError(413, `body larger than ${limit} bytes`));
      else if (large && !entered && size > large.largeBytes && !enterLarge()) return;
      else chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!failed) fail(new HttpError(400, `cannot read the body: ${err.message}`));
    });
    // A client that goes away mid-body frees its budget slot too.
    req.on('close', () => {
      if (!failed && !req.complete) fail(new HttpError(400, 'the client closed the connection before the body was complete'));
    });
    req.on('end', () => {
      if (failed) return;
      const body = Buffer.concat(chunks.splice(0), size); // emptied: the listeners hold no bytes either
      try {
        resolve(parseJson(body.toString('utf8')));
      } catch (err) {
        reject(new HttpError(400, `body is not valid JSON: ${(err as Error).message}`));
      } finally {
        if (entered) large!.leaveLarge();
      }
    });
  });
}
