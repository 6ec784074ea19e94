import * as v from "valibot";
import type { Api } from "../http/route-kit.ts";
import { setTyping } from "../services/typing.ts";

const state = v.picklist(["typing", "paused"], "expected typing or paused");

export const TypingBody = v.object({ state });
export const TypingResult = v.strictObject({ chatID: v.string(), state });

/**
 * POST /v1/chats/{chatID}/typing (the vendor CLI's `beeper presence --state typing|paused`). Inbound typing is the
 * other half: a `typing` event on /v1/ws (services/typing.ts).
 */
export function typingRoutes(api: Api) {
  api.add(
    {
      method: "POST",
      path: "/v1/chats/:chatID/typing",
      operationId: "setTyping",
      extension: true,
      summary: "Send a typing indicator",
      tag: "Chats",
      body: TypingBody,
      response: TypingResult,
      description:
        "Tells the chat's other participants that you are typing (`typing`) or stopped (`paused`); networks without " +
        "typing notifications answer 422 `NOT_SUPPORTED`. `chatID` in the answer is the chat's ID, also when the path " +
        "named its localChatID. Nothing is stored.",
    },
    ({ rc, params, body }) => setTyping(rc.app, params.chatID, body.state),
  );
}
