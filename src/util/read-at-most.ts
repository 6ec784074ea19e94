/**
 * Reads a byte stream whole, but never more than `limit` bytes: past the limit it cancels the stream and answers
 * undefined, so a caller refuses an oversized body without holding it. Read failures reject as the stream's do.
 *
 * @example
 * const bytes = await readAtMost(response.body, 5 * 1024); // undefined: over 5 KiB
 */
export async function readAtMost(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    parts.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.byteLength;
  }
  return all;
}
