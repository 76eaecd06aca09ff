/**
 * `items.map(fn)` with at most `limit` calls in flight, results in order. Rounds that touch many
 * organizations use it instead of one Promise.all: a thousand reads at once would hold every connection
 * of the driver's pool, and FerretDB, which keeps a PostgreSQL connection for each open cursor, then
 * stops answering altogether (docs/operations.md, "FerretDB").
 */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
