import * as Multipasta from "multipasta";
import { ApiError, badRequest } from "../http/errors.ts";

export interface MultipartUpload<T> {
  fields: Record<string, string>;
  file: T;
  fileName?: string;
  fileType?: string;
}

/**
 * Streams a multipart/form-data request: the part named `fileField` is handed to `consume` as an async iterable
 * while the body is still arriving, other parts are collected as text fields. Reading the body waits whenever the
 * consumer has not yet taken what was parsed, so memory holds about one network read, whatever the upload's size.
 * (multipasta does the parsing; it is runtime-neutral and hands over file content chunk by chunk.)
 */
export async function streamMultipart<T>(
  request: Request,
  fileField: string,
  limits: { maxFileBytes: number },
  consume: (content: AsyncIterable<Uint8Array>, info: Multipasta.PartInfo) => Promise<T>,
): Promise<MultipartUpload<T>> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\b/i.test(contentType) || !request.body)
    throw new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "the upload must be multipart/form-data with a file part");
  const fields: Record<string, string> = {};
  let parseError: Multipasta.MultipartError | undefined;
  let queue: Uint8Array[] = [];
  let fileEnded = false;
  let notifyConsumer: (() => void) | undefined;
  let notifyProducer: (() => void) | undefined;
  let consuming: Promise<T> | undefined;
  let info: Multipasta.PartInfo | undefined;

  async function* content(): AsyncIterable<Uint8Array> {
    for (;;) {
      if (queue.length) {
        const next = queue;
        queue = [];
        notifyProducer?.();
        for (const chunk of next) yield chunk;
        continue;
      }
      if (parseError) throw multipartError(parseError);
      if (fileEnded) return;
      await new Promise<void>((resolve) => (notifyConsumer = resolve));
      notifyConsumer = undefined;
    }
  }

  const parser = Multipasta.make({
    headers: { "content-type": contentType },
    maxParts: 16,
    maxFieldSize: 64 * 1024,
    maxPartSize: limits.maxFileBytes + 1,
    maxTotalSize: limits.maxFileBytes + 1024 * 1024,
    onField(part, value) {
      fields[part.name] = Multipasta.decodeField(part, value);
    },
    onFile(part) {
      if (part.name !== fileField || consuming) return () => undefined; // other files are read past and dropped
      info = part;
      consuming = consume(content(), part);
      consuming.catch(() => undefined); // awaited below; avoid an unhandled rejection meanwhile
      return (chunk) => {
        if (chunk === null) fileEnded = true;
        else queue.push(chunk);
        notifyConsumer?.();
      };
    },
    onError(error) {
      parseError ??= error;
      notifyConsumer?.();
    },
    onDone() {
      fileEnded = true;
      notifyConsumer?.();
    },
  });

  const reader = request.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        parser.end();
        break;
      }
      parser.write(value);
      if (parseError) break;
      // Backpressure: let the consumer take what was parsed before reading more of the body.
      while (queue.length && consuming) await Promise.race([new Promise<void>((resolve) => (notifyProducer = resolve)), consuming.then(() => undefined, () => undefined)]);
    }
  } finally {
    notifyProducer = undefined;
    if (parseError || !consuming) await reader.cancel().catch(() => undefined);
  }
  if (!consuming) {
    if (parseError) throw multipartError(parseError);
    throw badRequest("the upload has no file part", [{ code: "required", message: `a part named "${fileField}" is required`, path: ["body", fileField] }]);
  }
  fileEnded = true;
  notifyConsumer?.();
  const file = await consuming;
  if (parseError) throw multipartError(parseError);
  return { fields, file, fileName: info?.filename, fileType: info?.contentType };
}

function multipartError(error: Multipasta.MultipartError): ApiError {
  if (error._tag === "ReachedLimit")
    return new ApiError(413, "PAYLOAD_TOO_LARGE", `the upload exceeds the limit (${error.limit})`);
  return badRequest(`malformed multipart body (${error._tag})`, [{ code: "invalid_multipart", message: error._tag, path: ["body"] }]);
}
