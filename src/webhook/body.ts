import type { IncomingMessage } from 'node:http';

/** An HTTP error for the client: status code and a message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads and parses a JSON body of at most `limit` bytes. Leaner than body-parser (no
 * charset decoding layers, no content-type negotiation): this is the admission hot path.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      reject(new HttpError(413, `body larger than ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (err: HttpError) => {
      failed = true;
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) fail(new HttpError(413, `body larger than ${limit} bytes`));
      else chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!failed) fail(new HttpError(400, `cannot read the body: ${err.message}`));
    });
    req.on('end', () => {
      if (failed) return;
      try {
        resolve(JSON.parse(Buffer.concat(chunks, size).toString('utf8')));
      } catch (err) {
        reject(new HttpError(400, `body is not valid JSON: ${(err as Error).message}`));
      }
    });
  });
}
