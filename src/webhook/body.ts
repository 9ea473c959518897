import type { NextFunction, Request, Response } from 'express';

/** An HTTP error for the error handler: status code and a message for the client. */
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
export function jsonBody(limit: number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      next(new HttpError(413, `body larger than ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        next(new HttpError(413, `body larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (failed) return;
      failed = true;
      next(new HttpError(400, `cannot read the body: ${err.message}`));
    });
    req.on('end', () => {
      if (failed) return;
      try {
        req.body = JSON.parse(Buffer.concat(chunks, size).toString('utf8'));
      } catch (err) {
        next(new HttpError(400, `body is not valid JSON: ${(err as Error).message}`));
        return;
      }
      next();
    });
  };
}
