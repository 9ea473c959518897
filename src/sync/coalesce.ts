/**
 * Wraps `work` so that it runs one at a time and calls made while it runs share the next
 * run: many concurrent callers (trusted deletes recording their tombstones) become one
 * write each time, never a queue of writes. Each caller resolves or fails with the run
 * that carried its change.
 */
export function coalesce(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const start = (): Promise<void> => {
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
