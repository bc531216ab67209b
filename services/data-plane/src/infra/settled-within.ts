/**
 * Resolves once `promise` settles or `ms` have passed, whichever comes first, its outcome
 * ignored: for the waits of a shutdown, which must not outlast its deadline on a Redis
 * that takes a command and never answers (a stalled server keeps the connection open).
 */
export function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!promise) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
}
