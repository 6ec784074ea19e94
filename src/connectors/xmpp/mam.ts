import xml from "@xmpp/xml";
import type { XmppConnection as Client } from "./connection.ts";
import type { Element } from "@xmpp/xml";
import { bare, NS, unwrap } from "./stanzas.ts";

const RSM = "http://jabber.org/protocol/rsm";

export interface ArchiveQuery {
  /** A room's JID for its archive; absent for the account's own archive. */
  archive?: string;
  /** Only the conversation with this JID (own archive). */
  with?: string;
  /** Messages after this archive ID (forward paging). */
  after?: string;
  /** The page that ends at this archive ID (backward paging); "" asks for the newest page. */
  before?: string;
  /** Only messages up to this time. */
  end?: number;
  max: number;
}

export interface ArchivedMessage {
  message: Element;
  archiveID: string;
}

export interface ArchivePage {
  messages: ArchivedMessage[];
  /** The server says this is the last page in the direction asked. */
  complete: boolean;
  first?: string;
  last?: string;
}

let queries = 0;

/**
 * One XEP-0313 query: results arrive as messages tagged with our query ID before the IQ result that closes the
 * page (`<fin/>`). `onResult` lets the client keep those messages out of its live traffic.
 */
export async function queryArchive(
  xmpp: Client,
  query: ArchiveQuery,
  selfBare: string,
  timeoutMs = 30_000,
): Promise<ArchivePage> {
  const queryID = `q${(queries++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const messages: ArchivedMessage[] = [];
  // Results come from the archive itself: the account's own (no `from`, or its bare JID) or the room's.
  const archiveJID = query.archive ?? selfBare;
  const collect = (stanza: Element) => {
    if (!stanza.is("message")) return;
    if (bare(String(stanza.attrs.from ?? archiveJID)) !== archiveJID) return;
    const found = unwrap(stanza, selfBare);
    if (found?.via === "archive" && found.queryID === queryID && found.archiveID)
      messages.push({ message: found.inner, archiveID: found.archiveID });
  };
  xmpp.on("stanza", collect);
  try {
    const fields = [field("FORM_TYPE", NS.mam, "hidden")];
    if (query.with) fields.push(field("with", query.with));
    if (query.end !== undefined) fields.push(field("end", new Date(query.end).toISOString()));
    const set = [xml("max", {}, String(query.max))];
    if (query.after !== undefined) set.push(xml("after", {}, query.after));
    if (query.before !== undefined) set.push(xml("before", {}, query.before));
    const iq = xml(
      "iq",
      { type: "set", ...(query.archive ? { to: query.archive } : {}) },
      xml(
        "query",
        { xmlns: NS.mam, queryid: queryID },
        xml("x", { xmlns: "jabber:x:data", type: "submit" }, ...fields),
        xml("set", { xmlns: RSM }, ...set),
      ),
    );
    const response = await xmpp.iqCaller.request(iq, timeoutMs);
    const fin = response.getChild("fin", NS.mam);
    const rsm = fin?.getChild("set", RSM);
    return {
      messages,
      complete: fin?.attrs.complete === "true" || fin?.attrs.complete === "1",
      first: rsm?.getChildText("first") ?? undefined,
      last: rsm?.getChildText("last") ?? undefined,
    };
  } finally {
    xmpp.removeListener("stanza", collect);
  }
}

/** Whether a message stanza is an archive result (any query's): those never count as live traffic. */
export function isArchiveResult(stanza: Element): boolean {
  return stanza.getChild("result", NS.mam) !== undefined;
}

function field(name: string, value: string, type?: string): Element {
  return xml("field", { var: name, ...(type ? { type } : {}) }, xml("value", {}, value));
}
