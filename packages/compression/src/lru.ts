/**
 * A least-recently-used map of bounded size (Map keeps insertion order; a hit is moved
 * to the end). The per-process memory behind the memoised steps: their results depend
 * only on their key, so callers still see pure functions.
 */
export class Lru<V> {
  private readonly map = new Map<string, V>();

  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (hit !== undefined) {
      this.map.delete(key);
      this.map.set(key, hit);
    }
    return hit;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    if (this.map.size >= this.limit) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(key, value);
  }

  /** Removes and returns the entry: for values that are changed by whoever takes them. */
  take(key: string): V | undefined {
    const hit = this.map.get(key);
    this.map.delete(key);
    return hit;
  }

  clear(): void {
    this.map.clear();
  }
}
