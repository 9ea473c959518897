/**
 * Wraps `work` so that it runs one at a time and calls made while it runs share the next
 * run: many concurrent callers (trusted deletes recording their tombstones) become one
 * write each time, never a queue of writes. Each caller resolves or fails with the run
 * that carried its change; a run always starts after the call, so it sees what the caller saw.
 */
export function coalesce<T = void>(work: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  let queued: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const run = work().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (!running) return start();
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
}
