import xml from "@xmpp/xml";
import type { XmppConnection as Client } from "./connection.ts";
import { NetworkError } from "../../bridges/connector.ts";

const NS_UPLOAD = "urn:xmpp:http:upload:0";
const NS_DISCO_ITEMS = "http://jabber.org/protocol/disco#items";
const NS_DISCO_INFO = "http://jabber.org/protocol/disco#info";
/** The only headers XEP-0363 lets a slot hand out; anything else in a slot is ignored. */
const SLOT_HEADERS = new Set(["authorization", "cookie", "expires"]);

/**
 * The first of the server and its items (service discovery, XEP-0030) that has `feature`: how the upload service
 * (XEP-0363) and the group chat service (XEP-0045) are found. Undefined when none has it.
 */
export async function findService(xmpp: Client, domain: string, feature: string): Promise<string | undefined> {
  const items = await xmpp.iqCaller.get(xml("query", { xmlns: NS_DISCO_ITEMS }), domain).catch(() => undefined);
  const candidates = [domain, ...(items?.getChildren("item").map((i) => i.attrs.jid as string) ?? [])];
  for (const jid of candidates) {
    const info = await xmpp.iqCaller.get(xml("query", { xmlns: NS_DISCO_INFO }), jid).catch(() => undefined);
    if (info?.getChildren("feature").some((f) => f.attrs.var === feature)) return jid;
  }
  return undefined;
}

export const findUploadService = (xmpp: Client, domain: string) => findService(xmpp, domain, NS_UPLOAD);

/**
 * Uploads a file: asks the service for a slot, PUTs the bytes with the slot's headers (the server checks them),
 * and answers the URL to share. The bytes stream through; the file is never held in memory.
 */
export async function uploadFile(
  xmpp: Client,
  service: string,
  file: { fileName: string; size: number; contentType: string; open(): ReadableStream<Uint8Array> },
): Promise<string> {
  const answer = await xmpp.iqCaller
    .request(
      xml(
        "iq",
        { type: "get", to: service },
        xml("request", {
          xmlns: NS_UPLOAD,
          filename: file.fileName,
          size: String(file.size),
          "content-type": file.contentType,
        }),
      ),
    )
    .catch((error: Error) => {
      throw new NetworkError("rejected", `the server refused the upload: ${error.message}`);
    });
  const slot = answer.getChild("slot", NS_UPLOAD);
  const put = slot?.getChild("put");
  const get = slot?.getChild("get")?.attrs.url as string | undefined;
  if (!put?.attrs.url || !get) throw new NetworkError("rejected", "the server's upload slot has no PUT or GET URL");
  const headers = new Headers({ "content-type": file.contentType, "content-length": String(file.size) });
  for (const header of put.getChildren("header")) {
    const name = String(header.attrs.name ?? "").toLowerCase();
    if (SLOT_HEADERS.has(name)) headers.set(name, header.text().replace(/[\r\n]/g, ""));
  }
  const response = await fetch(
    put.attrs.url as string,
    { method: "PUT", headers, body: withLength(file.open(), file.size), duplex: "half" } as RequestInit,
  );
  await response.body?.cancel();
  if (!response.ok) throw new NetworkError("rejected", `the upload failed: HTTP ${response.status}`);
  return get;
}

/**
 * Upload services need the length up front (Prosody answers a chunked PUT with 413). Node's fetch sends the
 * Content-Length header given with a stream; workerd sends a stream chunked unless it is a FixedLengthStream.
 */
function withLength(body: ReadableStream<Uint8Array>, size: number): ReadableStream<Uint8Array> {
  const FixedLength = (
    globalThis as { FixedLengthStream?: new (length: number) => TransformStream<Uint8Array, Uint8Array> }
  ).FixedLengthStream;
  return FixedLength ? body.pipeThrough(new FixedLength(size)) : body;
}
