/** App-level tools: unified search, focus, and the documentation search. */
import * as v from "valibot";
import { bounded, LIMITS } from "../../schema/limits.ts";
import { FocusBody, SearchQuery } from "../../schema/requests/app.ts";
import { Success } from "../../schema/wire.ts";
import { focus } from "../../services/focus.ts";
import { unifiedSearch } from "../../services/search.ts";
import { capMessage, chatBlock, code, cut, messageBlock, plain } from "../format.ts";
import { Chat, describe, MessageSearchPage } from "../schemas.ts";
import { defineTool } from "../tool.ts";

export const searchTool = defineTool({
  name: "search",
  title: "Search everything",
  description:
    "One search over chats and messages, as a search box shows it: chats whose title or network has the words (as people type them: " +
    '"alice smi" finds Alice Smith), group chats with a participant of that name, and the newest messages with all the words (literal words). ' +
    "Page on with search_chats or search_messages.",
  input: v.object({ query: describe(SearchQuery.entries.query, "The words to look for.") }),
  output: v.strictObject({
    results: v.strictObject({ chats: v.array(Chat), in_groups: v.array(Chat), messages: MessageSearchPage }),
  }),
  readOnly: true,
  async run({ query }, tc) {
    const { results } = await unifiedSearch(tc.app, query);
    const messages = { ...results.messages, items: results.messages.items.map((m) => capMessage(m)) };
    const part = (title: string, blocks: string[]) => `## ${title}\n\n${blocks.length ? blocks.join("\n\n") : "None."}`;
    const text = [
      part(`Chats (${results.chats.length})`, results.chats.map(chatBlock)),
      part(`Groups with a matching participant (${results.in_groups.length})`, results.in_groups.map(chatBlock)),
      part(
        `Messages (${messages.items.length}${messages.hasMore ? "+" : ""})`,
        messages.items.map((m) => messageBlock(m, { chatTitle: messages.chats[m.chatID]?.title ?? m.chatID })),
      ),
      messages.hasMore && messages.oldestCursor
        ? `More messages: call search_messages with query ${code(query)}, cursor ${code(messages.oldestCursor)} and direction "before".`
        : "",
    ];
    return { structured: { results: { ...results, messages } }, text: text.filter(Boolean).join("\n\n") };
  },
});

export const focusAppTool = defineTool({
  name: "focus_app",
  title: "Show a chat in the app",
  description:
    "Asks the user's inbox UI to show a chat (at a message) and optionally prefill a draft. This server has no window: it checks the IDs " +
    "and sends a focus event to connected UIs (the /v1/ws WebSocket); without arguments it just brings the app forward.",
  input: FocusBody,
  output: Success,
  readOnly: false,
  idempotent: true,
  async run(args, tc) {
    const done = await focus(tc.app, args);
    const what = args.chatID
      ? `chat ${code(args.chatID)}${args.messageID ? ` at messageID ${code(args.messageID)}` : ""}`
      : "the app";
    return { structured: done, text: `Focus event sent for ${what}${args.draftText ? ", with a draft" : ""}.` };
  },
});

const DocResult = v.strictObject({
  source: v.picklist(["readme", "openapi"]),
  file: v.optional(v.string()),
  title: v.string(),
  text: v.string(),
  matched: v.array(v.string()),
  truncated: v.optional(v.literal(true)),
});

export const searchDocsTool = defineTool({
  name: "search_docs",
  title: "Search this API's documentation",
  description:
    "Searches the README, the manual in docs/ and the OpenAPI document of this server (every endpoint, its parameters and answers) " +
    "by literal words; best sections first, each naming the file it came from. Use it to learn how to do something over HTTP " +
    "that no tool covers.",
  input: v.object({
    query: describe(
      v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1, "query must not be empty")),
      "Words to look for (word starts, case-insensitive).",
    ),
    language: v.optional(
      describe(
        v.picklist(["http", "python", "go", "typescript", "javascript", "terraform", "ruby", "java", "kotlin"]),
        "Prefer examples in this language (http: curl).",
      ),
    ),
    detail: v.optional(describe(v.picklist(["default", "verbose"]), "verbose: more sections, each longer."), "default"),
  }),
  output: v.strictObject({ results: v.array(DocResult) }),
  readOnly: true,
  async run({ query, language, detail }, tc) {
    const verbose = detail === "verbose";
    const cap = verbose ? 6000 : 1500;
    const results = tc
      .docs()
      .search(query, { limit: verbose ? 8 : 4, language })
      .map(({ source, file, title, text, matched }) => {
        const long = text.length > cap;
        const result: v.InferOutput<typeof DocResult> = {
          source,
          title,
          text: long ? `${cut(text, cap)}…` : text,
          matched,
        };
        if (file !== undefined) result.file = file;
        if (long) result.truncated = true;
        return result;
      });
    if (!results.length)
      return { structured: { results }, text: `Nothing in the documentation has the words "${plain(query)}".` };
    const blocks = results.map(
      (r) =>
        `## ${r.file ?? "API"}: ${r.title}\n\n${r.text}${r.truncated ? '\n\n(cut; detail: "verbose" shows more)' : ""}`,
    );
    return { structured: { results }, text: blocks.join("\n\n---\n\n") };
  },
});
