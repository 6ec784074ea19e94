/** Accounts and people: which accounts there are, and starting a direct chat with someone by name, phone or email. */
import * as v from "valibot";
import { ApiError } from "../../errors.ts";
import { bounded, id, LIMITS } from "../../schema/limits.ts";
import { StartBody } from "../../schema/requests/chats.ts";
import { Account, User } from "../../schema/wire.ts";
import { listAccounts, searchContacts } from "../../services/accounts.ts";
import { createChat } from "../../services/chats.ts";
import type { Context } from "../../services/context.ts";
import { chatBlock, code, personName, plain } from "../format.ts";
import { Chat, describe } from "../schemas.ts";
import { defineTool } from "../tool.ts";

export const getAccountsTool = defineTool({
  name: "get_accounts",
  title: "List chat accounts",
  description:
    "The connected chat accounts (one per network login) with their accountID, network, the user's own identity and status.",
  input: v.object({}),
  output: v.strictObject({ items: v.array(Account) }),
  readOnly: true,
  async run(_args, tc) {
    const items = listAccounts(tc.app);
    const lines = items.map(
      (a) =>
        `- ${plain(a.network ?? a.bridge.type, 40)}: ${personName(a.user)} — accountID ${code(a.accountID)}, ${a.status}${a.statusText ? ` (${plain(a.statusText)})` : ""}`,
    );
    return {
      structured: { items },
      text: items.length ? `${items.length} account(s):\n${lines.join("\n")}` : "No accounts are connected.",
    };
  },
});

const Candidate = v.strictObject({ accountID: v.string(), user: User });
type Candidate = v.InferOutput<typeof Candidate>;

export const startChatTool = defineTool({
  name: "start_chat",
  title: "Start a direct chat",
  description:
    "Finds the direct chat with a person, or creates it: `to` is their name, phone number (E.164), email, username or user ID. " +
    "When several people match, nothing is created and the candidates come back: ask the user, then call again with the userID as `to`. " +
    "Optionally sends a first message (messageText) when the chat is new.",
  input: v.object({
    to: v.optional(
      describe(
        v.pipe(bounded(LIMITS.queryTextBytes), v.trim(), v.minLength(1)),
        "Who: a name, phone number, email, username or user ID.",
      ),
    ),
    user: v.optional(
      describe(StartBody.entries.user, "Or the person's known identifiers, as POST /v1/chats/start takes them."),
    ),
    accountID: v.optional(describe(id, "The account to chat from (default: every account is searched).")),
    messageText: v.optional(
      describe(StartBody.entries.messageText.wrapped, "A first message, sent only when the chat is created."),
    ),
    allowInvite: StartBody.entries.allowInvite,
  }),
  output: v.strictObject({
    status: describe(
      v.picklist(["existing", "created", "ambiguous", "not_found"]),
      "existing/created: `chat` is the direct chat; ambiguous: see `candidates`.",
    ),
    chat: v.optional(Chat),
    candidates: v.optional(v.array(Candidate)),
  }),
  readOnly: false,
  openWorld: true,
  async run({ to, user, accountID, messageText, allowInvite }, tc) {
    if (!to && !user)
      throw new ApiError(400, "INVALID_REQUEST", "give `to` (a name, phone, email or user ID) or `user`");
    let target: Candidate | undefined;
    if (user) {
      if (!accountID) throw new ApiError(400, "INVALID_REQUEST", "`user` needs the accountID to chat from");
      target = { accountID, user: { ...user, id: user.id ?? "" } };
    } else {
      const found = await candidates(tc.app, to!, accountID);
      const exact = found.filter((c) => isExactly(c.user, to!));
      target = exact.length === 1 ? exact[0] : found.length === 1 ? found[0] : undefined;
      if (!target) {
        const status = found.length ? ("ambiguous" as const) : ("not_found" as const);
        const list = found
          .slice(0, 10)
          .map(
            (c) =>
              `- ${personName(c.user)} — userID ${code(c.user.id)}, accountID ${code(c.accountID)}${c.user.phoneNumber ? `, ${c.user.phoneNumber}` : ""}${c.user.email ? `, ${plain(c.user.email)}` : ""}`,
          );
        const text = found.length
          ? `${found.length} people match "${plain(to)}"; nothing was created. Ask which one, then call start_chat with the userID as \`to\`:\n${list.join("\n")}`
          : `Nobody matches "${plain(to)}".`;
        return { structured: { status, candidates: found.slice(0, 10) }, text };
      }
    }
    const chat = await createChat(tc.app, {
      accountID: target.accountID,
      mode: "start",
      user: user ?? { id: target.user.id },
      messageText,
      allowInvite,
    });
    const { chatID: _chatID, status = "existing", ...rest } = chat;
    const text = `${status === "created" ? "Created" : "Found"} the direct chat with ${personName(target.user)}${status === "created" && messageText ? " and sent the first message" : ""}:\n\n${chatBlock(rest)}`;
    return { structured: { status, chat: rest }, text };
  },
});

/** People matching `to` on each account (the network's contact search, which also resolves exact identifiers). */
async function candidates(app: Context, to: string, accountID?: string): Promise<Candidate[]> {
  const accounts = accountID ? [accountID] : listAccounts(app).map((a) => a.accountID);
  const out: Candidate[] = [];
  for (const account of accounts) {
    try {
      for (const user of (await searchContacts(app, account, to)).items)
        if (!user.isSelf) out.push({ accountID: account, user });
    } catch (error) {
      // A network without contact search is skipped when searching every account; asked for by name, it is the answer.
      if (accountID || !(error instanceof ApiError) || error.status >= 500) throw error;
    }
  }
  return out;
}

const norm = (s: string | undefined) => s?.trim().toLowerCase().replace(/^@/, "");
const digits = (s: string | undefined) => s?.replace(/[^\d+]/g, "");

function isExactly(u: User, to: string): boolean {
  const t = norm(to);
  if ([u.id, u.username, u.email, u.fullName].some((field) => norm(field) === t)) return true;
  const phone = digits(to);
  return !!phone && phone.length >= 5 && digits(u.phoneNumber) === phone;
}
