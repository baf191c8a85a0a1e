/**
 * The ids an in-memory index keeps under one key (tables.ts): one id as the id itself, up to
 * SMALL_BUCKET as an array, more as a Set. Most keys hold a few ids (an app's tokens, a user's
 * authorizations, an account's one workspace user), and a Set costs about 40 bytes an id (a hash
 * table of twice its size, at worst, of two slots and half a bucket an entry) where an array costs
 * 8–12 and a lone id nothing. The token benchmark's 10,000 apps hold ~31 tokens and 10
 * authorizations each: as Sets they were 27 MB of its heap (20,000 of them). Ids keep the order they
 * were added in, whichever the form (a Set's order).
 */

/** Ids under one key; never empty (a key with no ids is removed from its index). */
export type Bucket = string | string[] | Set<string>;

/**
 * The most ids a bucket keeps as an array: adding or removing one scans it (64 string
 * comparisons at most, each settled by the ids' lengths or hashes: well under a microsecond).
 */
export const SMALL_BUCKET = 64;

/** `bucket` with `id` added (the same object, changed, or one in its place). */
export function withId(bucket: Bucket | undefined, id: string): Bucket {
  if (bucket === undefined) return id;
  if (typeof bucket === 'string') return bucket === id ? bucket : [bucket, id];
  if (Array.isArray(bucket)) {
    if (bucket.includes(id)) return bucket;
    if (bucket.length < SMALL_BUCKET) {
      bucket.push(id);
      return bucket;
    }
    return new Set(bucket).add(id);
  }
  return bucket.add(id);
}

/** `bucket` without `id` (the same object, changed, or one in its place); undefined when none are left. */
export function withoutId(bucket: Bucket, id: string): Bucket | undefined {
  if (typeof bucket === 'string') return bucket === id ? undefined : bucket;
  if (Array.isArray(bucket)) {
    const i = bucket.indexOf(id);
    if (i >= 0) bucket.splice(i, 1);
    return bucket.length > 1 ? bucket : bucket[0];
  }
  bucket.delete(id);
  return bucket.size ? bucket : undefined;
}

/** The ids of `bucket`, to iterate (in the order they were added) or count. */
export function idsOf(bucket: Bucket): readonly string[] | ReadonlySet<string> {
  return typeof bucket === 'string' ? [bucket] : bucket;
}

/** How many ids `bucket` holds. */
export function sizeOf(bucket: Bucket): number {
  return typeof bucket === 'string' ? 1 : Array.isArray(bucket) ? bucket.length : bucket.size;
}
