/**
 * Registers one /v0 endpoint on the API: its path, method, documentation (deprecated, tag `v0`, the successor named
 * in its description, the v0 error body) and a handler whose answer carries the successor link for the resource
 * it was asked about.
 */
import type * as v from "valibot";
import type { Api, Call, Operation } from "../http/route-kit.ts";
import { successorLink } from "./deprecation.ts";
import { V0_ENDPOINTS, type V0Name } from "./endpoints.ts";
import { V0_ERROR_COMPONENT } from "./error-body.ts";

type Described<Q extends v.GenericSchema | undefined, B extends v.GenericSchema | undefined> = Pick<
  Operation<Q, B>,
  "summary" | "query" | "body"
> & {
  /** Schema of the 200 JSON answer (the scenario suite checks every answer against it). */
  response: v.GenericSchema;
  /** What differs from the successor, if anything. */
  notes?: string;
};

/** `get-chat` → `v0GetChat`. */
const operationId = (name: string) => `v0${name.replace(/(^|-)(\w)/g, (_, _dash, c: string) => c.toUpperCase())}`;

export function addV0<
  Q extends v.GenericSchema | undefined = undefined,
  B extends v.GenericSchema | undefined = undefined,
>(api: Api, name: V0Name, doc: Described<Q, B>, handler: (call: Call<Q, B>) => unknown): void {
  const { method, successor } = V0_ENDPOINTS[name];
  const { notes, ...described } = doc;
  api.add<Q, B>(
    {
      ...described,
      method,
      path: `/v0/${name}`,
      operationId: operationId(name),
      tag: "v0",
      deprecated: true,
      errorBody: V0_ERROR_COMPONENT,
      description: `Deprecated: use \`${successor.method} ${successor.path}\`.${notes ? ` ${notes}` : ""}`,
    },
    async (call) => {
      const data = await handler(call);
      const given = { ...(call.query as object | undefined), ...(call.body as object | undefined) } as Record<
        string,
        unknown
      >;
      return new Response(JSON.stringify(data), {
        status: 200,
        headers: { "content-type": "application/json", link: successorLink(name, given) },
      });
    },
  );
}
