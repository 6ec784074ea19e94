/**
 * The one HTTP client of the suites and benches. A request answers what went over the wire: status, headers, the
 * text and, when the content type says JSON, the parsed body; or the response itself, unread, for bytes and
 * streams. Token, headers and body are the caller's, so a test can send what no SDK would (no token, a foreign
 * header, a malformed or streamed body). Types are the API's own (src/schema/wire.ts). Nothing here asserts.
 */
import type { Chat, Message, Page } from "../../src/schema/wire.ts";
import { chatPath, ECHO_ID, enc, messagePath, waitFor } from "./common.ts";

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON when the content type is JSON, else undefined. */
  body: T;
}

export interface Init {
  /** A JSON body (content-type application/json unless `headers` names another). */
  json?: unknown;
  /** A body sent as it is: text, bytes, FormData, a stream. */
  body?: BodyInit;
  headers?: Record<string, string>;
  /** The bearer token; undefined: the client's, null: no Authorization header. */
  token?: string | null;
  /** Streams the request body (set on its own for a ReadableStream). */
  duplex?: boolean;
}

export interface Options {
  /** The transport (default: the global fetch). */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Sees every answer that has a JSON body (the scenario suite checks it against the served OpenAPI document). */
  check?: (method: string, url: string, answer: Answer) => void;
}

export class Api {
  constructor(
    readonly url: string,
    readonly token: string | null = null,
    readonly options: Options = {},
  ) {}

  /** The same server with another token or other options. */
  with(changes: { token?: string | null } & Options): Api {
    const { token = this.token, ...options } = changes;
    return new Api(this.url, token, { ...this.options, ...options });
  }

  withToken = (token: string | null) => this.with({ token });

  /** The response, unread. */
  response(method: string, path: string, init: Init = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json", ...init.headers };
    const token = init.token === undefined ? this.token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body = init.body;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["content-type"] ??= "application/json";
    }
    const duplex = init.duplex || body instanceof ReadableStream ? { duplex: "half" } : {};
    return (this.options.fetch ?? fetch)(this.url + path, { method, headers, body, ...duplex } as RequestInit);
  }

  async raw<T = any>(method: string, path: string, init: Init = {}): Promise<Answer<T>> {
    const res = await this.response(method, path, init);
    const text = await res.text();
    const json = text !== "" && /json/i.test(res.headers.get("content-type") ?? "");
    const answer: Answer<T> = {
      status: res.status,
      headers: res.headers,
      text,
      body: json ? JSON.parse(text) : undefined,
    };
    if (json) this.options.check?.(method, this.url + path, answer);
    return answer;
  }

  async bytes(method: string, path: string, init: Init = {}) {
    const res = await this.response(method, path, init);
    return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
  }

  /**
   * A setup step: the parsed body, or an error with the response shown unless the status is the expected one (by
   * default 204 for DELETE, archive and reminders, 200 for the rest).
   */
  async ok<T = any>(method: string, path: string, json?: unknown, status?: number): Promise<T> {
    return this.okWith<T>(method, path, { json }, status);
  }

  async okWith<T = any>(method: string, path: string, init: Init, status?: number): Promise<T> {
    const res = await this.raw<T>(method, path, init);
    const wanted = status ?? (method === "DELETE" || /\/(archive|reminders)$/.test(path) ? 204 : 200);
    if (res.status !== wanted) throw new Error(`${method} ${path} → ${res.status} (wanted ${wanted}): ${res.text}`);
    return res.body;
  }

  get = <T = any>(path: string) => this.ok<T>("GET", path);
  post = <T = any>(path: string, json: unknown) => this.ok<T>("POST", path, json);
  chat = (chatID: string) => this.get<Chat>(chatPath(chatID));
  message = (chatID: string, messageID: string) => this.get<Message>(messagePath(chatID, messageID));

  /** POST a message (any body), the answer as it came. */
  postMessage = (chatID: string, body: unknown) =>
    this.raw<{ chatID: string; pendingMessageID: string }>("POST", `${chatPath(chatID)}/messages`, { json: body });

  /** Sends a text; the pending message's ID. */
  async send(chatID: string, text: string): Promise<string> {
    return (await this.post<{ pendingMessageID: string }>(`${chatPath(chatID)}/messages`, { text })).pendingMessageID;
  }

  /** Waits until a sent message has left PENDING (edits and deletes refuse pending messages). */
  settled(chatID: string, messageID: string, timeoutMs = 10_000): Promise<Message> {
    return waitFor(
      `message ${messageID} to leave PENDING`,
      async () => {
        const m = await this.message(chatID, messageID);
        return m.sendStatus?.status === "PENDING" ? undefined : m;
      },
      timeoutMs,
    );
  }

  /** The newest messages of a chat (its first page). */
  recent = async (chatID: string) => (await this.get<Page<Message>>(`${chatPath(chatID)}/messages`)).items;

  /** Every chat of the list (a query such as `accountIDs=…`), page after page. */
  async chats(query = ""): Promise<Chat[]> {
    const out: Chat[] = [];
    let cursor: string | null = null;
    for (;;) {
      const sep = query ? "&" : "";
      const page: Page<Chat> = await this.get(`/v1/chats?${query}${cursor ? `${sep}cursor=${enc(cursor)}` : ""}`);
      out.push(...page.items);
      if (!page.hasMore || !page.oldestCursor) return out;
      cursor = page.oldestCursor;
    }
  }

  /** The direct chat with Echo (of the account, when one is named). */
  async echoChat(accountID?: string): Promise<Chat> {
    const chats = await this.chats(accountID ? `accountIDs=${enc(accountID)}` : "");
    const chat = chats.find((c) => c.type === "single" && c.participants.items.some((p) => p.id === ECHO_ID));
    if (!chat) throw new Error(`no Echo chat${accountID ? ` for ${accountID}` : ""}`);
    return chat;
  }

  /** `n` chats of the account without Echo (quiet: nobody answers there). */
  async quietChats(accountID: string, n: number): Promise<Chat[]> {
    const chats = await this.chats(`accountIDs=${enc(accountID)}`);
    const quiet = chats.filter((c) => !c.participants.items.some((p) => p.id === ECHO_ID));
    if (quiet.length < n) throw new Error(`only ${quiet.length} quiet chats for ${accountID}`);
    return quiet.slice(0, n);
  }
}
