import * as Multipasta from "multipasta";
import { ApiError, badRequest } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import { bodyReadFailed } from "../http/validate.ts";

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
  let readError: Error | undefined;
  /** Set when the consumer failed (storage error, size limit): it takes nothing more, so reading stops. */
  let consumerFailed = false;
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
      if (readError) throw readError;
      if (fileEnded) return;
      await new Promise<void>((resolve) => (notifyConsumer = resolve));
      notifyConsumer = undefined;
    }
  }

  const parser = Multipasta.make({
    headers: { "content-type": contentType },
    maxParts: LIMITS.multipartParts,
    maxFieldSize: LIMITS.stringBytes,
    // multipasta counts part headers (and earlier fields) into these sizes; the consumer enforces the exact file
    // limit, so these only need to stop runaway bodies.
    maxPartSize: limits.maxFileBytes + 2 * 1024 * 1024,
    maxTotalSize: limits.maxFileBytes + 2 * 1024 * 1024,
    onField(part, value) {
      fields[part.name] = Multipasta.decodeField(part, value);
    },
    onFile(part) {
      if (part.name !== fileField || consuming) return () => undefined; // other files are read past and dropped
      info = part;
      consuming = consume(content(), part);
      // Awaited below; meanwhile a failure must wake the reading loop instead of becoming an unhandled rejection.
      consuming.catch(() => {
        consumerFailed = true;
        notifyProducer?.();
      });
      let received = 0;
      return (chunk) => {
        if (chunk === null) fileEnded = true;
        else {
          received += chunk.length;
          if (received > limits.maxFileBytes) parseError ??= { _tag: "ReachedLimit", limit: "MaxPartSize" };
          else queue.push(chunk);
        }
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
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        // The client went away mid-upload: end the consumer with the error so it removes what it wrote.
        readError = error instanceof Error ? error : new Error(String(error));
        notifyConsumer?.();
        break;
      }
      try {
        if (chunk.done) {
          parser.end();
          break;
        }
        parser.write(chunk.value);
      } catch (error) {
        // multipasta throws, rather than reports, a few malformed inputs (a `filename*` whose percent-encoding is
        // not UTF-8 raises a URIError): a malformed body all the same.
        parseError ??= { _tag: "BadHeaders", error } as unknown as Multipasta.MultipartError;
        notifyConsumer?.();
        break;
      }
      if (parseError) break;
      // Backpressure: let the consumer take what was parsed before reading more of the body. A consumer that has
      // finished or failed takes nothing more; stop reading then.
      while (queue.length && consuming && !consumerFailed)
        await new Promise<void>((resolve) => (notifyProducer = resolve));
      if (consumerFailed) break;
    }
  } finally {
    notifyProducer = undefined;
    if (parseError || readError || consumerFailed || !consuming) await reader.cancel().catch(() => undefined);
  }
  if (!consuming) {
    if (readError) bodyReadFailed(readError);
    if (parseError) throw multipartError(parseError);
    throw badRequest("the upload has no file part", [
      { code: "required", message: `a part named "${fileField}" is required`, path: ["body", fileField] },
    ]);
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
  return badRequest(`malformed multipart body (${error._tag})`, [
    { code: "invalid_multipart", message: error._tag, path: ["body"] },
  ]);
}
