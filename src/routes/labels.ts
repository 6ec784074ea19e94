import * as v from "valibot";
import { LIMITS } from "../schema/limits.ts";
import { noContent, type Api } from "../http/route-kit.ts";
import { Label } from "../schema/wire.ts";
import { createLabel, deleteLabel, listLabels } from "../services/labels.ts";

/** A label name as people see it: trimmed, non-empty, one line, no longer than a chat title. */
export const LabelBody = v.object({
  name: v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1, "name must not be empty"),
    v.maxBytes(LIMITS.titleBytes, `must be at most ${LIMITS.titleBytes} bytes`),
    v.check((name) => !/\p{Cc}/u.test(name), "name must not contain control characters (line breaks, tabs…)"),
  ),
});

/** /v1/labels: device-local chat labels (issue 10). Chats carry them in `labelIDs`; PATCH /v1/chats/{id} sets them. */
export function labelRoutes(api: Api) {
  const tag = "Labels";
  api
    .add(
      {
        method: "GET",
        path: "/v1/labels",
        operationId: "listLabels",
        extension: true,
        summary: "List labels",
        tag,
        response: v.array(Label),
        description: "This device's chat labels, sorted by name.",
      },
      ({ rc }) => listLabels(rc.app),
    )
    .add(
      {
        method: "POST",
        path: "/v1/labels",
        operationId: "createLabel",
        extension: true,
        summary: "Create a label",
        tag,
        body: LabelBody,
        response: Label,
        description:
          "A new label. A name already taken (ignoring case) is a 409 whose `details.labelID` is the existing label; a device that already has the most labels it may (1,000) gets a 409 without it.",
      },
      ({ rc, body }) => createLabel(rc.app, body.name),
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/labels/:labelID",
        operationId: "deleteLabel",
        extension: true,
        summary: "Delete a label",
        tag,
        description: "Deletes the label and takes it off every chat.",
        responses: { 204: { description: "Deleted." } },
      },
      async ({ rc, params }) => {
        await deleteLabel(rc.app, params.labelID);
        return noContent();
      },
    );
}
