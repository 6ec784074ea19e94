/**
 * The seven actions of /v0 (POST, parameters in a JSON body): each calls the service its /v1 successor calls and
 * answers `{success: true}` plus the action's data. A failure is an error status with the v0 error body.
 */
import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { resolveAsset, srcURL } from "../services/assets.ts";
import { archiveChat, clearReminder, createChat, setReminder } from "../services/chats.ts";
import { focus } from "../services/focus.ts";
import { sendMessage } from "../services/messages.ts";
import {
  ArchiveChatBody,
  ClearChatReminderBody,
  CreateChatBody,
  DownloadAssetBody,
  OpenAppBody,
  SendMessageBody,
  SetChatReminderBody,
} from "./inputs.ts";
import { addV0 } from "./operation.ts";
import { actionResult } from "./shapes.ts";

const done = { success: true } as const;
const Done = actionResult({});

export function v0ActionRoutes(api: Api): void {
  addV0(
    api,
    "open-app",
    {
      summary: "Open the app (v0)",
      body: OpenAppBody,
      response: Done,
      notes:
        "There is no window here: the chat and message are checked (404 otherwise) and a `focus` event is logged (WebSocket clients, GET /v1/events, webhooks).",
    },
    async ({ rc, body }) => focus(rc.app, body),
  );

  addV0(
    api,
    "download-asset",
    {
      summary: "Download an asset (v0)",
      body: DownloadAssetBody,
      response: actionResult({
        srcURL: v.pipe(v.string(), v.description("Where the asset's bytes are: a URL for `GET /v1/assets/serve`.")),
      }),
    },
    async ({ rc, body }) => ({
      ...done,
      srcURL: srcURL(rc.app.assets, await resolveAsset(rc.app, rc.app.assets, body.url)),
    }),
  );

  addV0(
    api,
    "create-chat",
    {
      summary: "Create a chat (v0)",
      body: CreateChatBody,
      response: actionResult({
        chatID: v.pipe(v.string(), v.description("The new (or, with `mode: start`, found) chat.")),
        status: v.optional(
          v.pipe(
            v.picklist(["existing", "created"]),
            v.description("`mode: start` only: whether the direct chat already existed."),
          ),
        ),
      }),
      notes:
        "Takes the body of /v1 (`accountID`, `type`, `participantIDs`, `title?`, `messageText?`, and `mode: start` with `user`).",
    },
    async ({ rc, body }) => {
      const { chatID, status } = await createChat(rc.app, body);
      return { ...done, chatID, ...(status ? { status } : {}) };
    },
  );

  addV0(
    api,
    "archive-chat",
    {
      summary: "Archive or unarchive a chat (v0)",
      body: ArchiveChatBody,
      response: Done,
      notes: "Body: `chatID` and `archived` (default true), as /v1 takes them.",
    },
    async ({ rc, body }) => {
      await archiveChat(rc.app, body.chatID, body.archived);
      return done;
    },
  );

  addV0(
    api,
    "set-chat-reminder",
    {
      summary: "Set a chat reminder (v0)",
      body: SetChatReminderBody,
      response: Done,
      notes: "Body: `chatID` and `reminder: {remindAtMs (or remindAt), dismissOnIncomingMessage?}`, as /v1 takes them.",
    },
    async ({ rc, body: { chatID, reminder } }) => {
      await setReminder(rc.app, chatID, reminder.at, reminder.dismissOnIncomingMessage);
      return done;
    },
  );

  addV0(
    api,
    "clear-chat-reminder",
    { summary: "Clear a chat reminder (v0)", body: ClearChatReminderBody, response: Done },
    async ({ rc, body }) => {
      await clearReminder(rc.app, body.chatID);
      return done;
    },
  );

  addV0(
    api,
    "send-message",
    {
      summary: "Send a message (v0)",
      body: SendMessageBody,
      response: actionResult({
        chatID: v.string(),
        pendingMessageID: v.pipe(v.string(), v.description("The message's ID while it is sent and after.")),
      }),
      notes: "Body: `chatID` plus /v1's (`text`, `replyToMessageID`, `attachment` with an `uploadID`).",
    },
    async ({ rc, body: { chatID, ...message } }) => ({ ...done, ...(await sendMessage(rc.app, chatID, message)) }),
  );
}
