/**
 * HTTP semantics for serving stored bytes (RFC 9110): ETag/Last-Modified validators, 304 for conditional GETs,
 * a single byte range → 206, an unsatisfiable one → 416. A request with several ranges gets the whole file (200),
 * which the RFC allows and every client handles.
 */
export interface ServedBytes {
  size: number;
  mimeType: string;
  etag: string;
  lastModified: number;
  fileName: string;
  /**
   * Throws (an ApiError, answered instead) unless bytes [start, end] can all be read: called before any answer that
   * stands for them — 200, 206, 304 and HEAD alike — so a stream never breaks off after its headers.
   */
  check(start: number, end: number): Promise<void>;
  read(start: number, end: number): ReadableStream<Uint8Array>;
}

export async function serveBytes(request: Request, bytes: ServedBytes): Promise<Response> {
  const headers = new Headers({
    "content-type": bytes.mimeType,
    etag: bytes.etag,
    "last-modified": new Date(bytes.lastModified).toUTCString(),
    "accept-ranges": "bytes",
    // no-transform: proxies and the Workers runtime must not re-encode (e.g. gzip) bytes served with ranges.
    "cache-control": "private, max-age=31536000, immutable, no-transform",
    "content-disposition": `inline; filename*=UTF-8''${encodeURIComponent(bytes.fileName.toWellFormed())}`,
    "x-content-type-options": "nosniff",
  });
  const ifNoneMatch = request.headers.get("if-none-match");
  const ifModifiedSince = request.headers.get("if-modified-since");
  const notModified = ifNoneMatch
    ? ifNoneMatch.split(",").some((tag) => tag.trim() === "*" || tag.trim().replace(/^W\//, "") === bytes.etag)
    : ifModifiedSince !== null &&
      Math.floor(bytes.lastModified / 1000) <= Math.floor(Date.parse(ifModifiedSince) / 1000);
  const last = bytes.size - 1;
  if (notModified) {
    if (last >= 0) await bytes.check(0, last);
    return new Response(null, { status: 304, headers });
  }

  const range = request.headers.get("range");
  const ifRange = request.headers.get("if-range");
  const rangeApplies = range !== null && (ifRange === null || ifRange === bytes.etag);
  if (rangeApplies && /^bytes=/i.test(range) && !range.includes(",")) {
    const parsed = parseRange(range, bytes.size);
    if (parsed === "unsatisfiable") {
      headers.set("content-range", `bytes */${bytes.size}`);
      headers.set("content-type", "application/json");
      return new Response(
        JSON.stringify({ code: "RANGE_NOT_SATISFIABLE", message: `the file has ${bytes.size} bytes` }),
        { status: 416, headers },
      );
    }
    if (parsed) {
      const [start, end] = parsed;
      headers.set("content-range", `bytes ${start}-${end}/${bytes.size}`);
      headers.set("content-length", String(end - start + 1));
      await bytes.check(start, end);
      return new Response(request.method === "HEAD" ? null : bytes.read(start, end), { status: 206, headers });
    }
  }
  headers.set("content-length", String(bytes.size));
  if (last >= 0) await bytes.check(0, last);
  const body = request.method === "HEAD" || bytes.size === 0 ? null : bytes.read(0, last);
  return new Response(body, { status: 200, headers });
}

/** One `bytes=` range; null when malformed (the range is then ignored, per RFC 9110). */
function parseRange(header: string, size: number): [number, number] | "unsatisfiable" | null {
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return null;
  if (start >= size) return "unsatisfiable";
  return [start, end];
}
