declare const FixedLengthStream: {
  new (length: number): { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> };
};

/**
 * workerd sends a streamed body chunked and drops the Content-Length the app set (asset serving); a
 * FixedLengthStream of that length keeps the header, which media players and download managers rely on.
 */
export function withFixedLength(response: Response): Response {
  const length = Number(response.headers.get("content-length"));
  if (!response.body || !Number.isSafeInteger(length) || length <= 0) return response;
  const { readable, writable } = new FixedLengthStream(length);
  void response.body.pipeTo(writable).catch(() => undefined);
  return new Response(readable, response);
}
