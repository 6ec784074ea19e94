import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerd, type WorkerdServer } from "../../test/harness/workerd.ts";
import { type InboxFlags, listInboxes, runInbox } from "./inbox-command.ts";
import { UsageError } from "./usage-error.ts";

// `inboxd inbox …` as an operator runs it: the real CLI in a child process against a real Worker in workerd that
// holds many inboxes (INBOXD_TENANCY=multi), its admin API behind the operator token.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OPERATOR = "operator-token-of-the-inbox-command-test";
let server: WorkerdServer;

beforeAll(async () => {
  server = await startWorkerd({ operatorToken: OPERATOR });
});
afterAll(async () => {
  await server?.stop();
});

/** Runs `inboxd inbox <args>` with the Worker's address and the operator token in the environment (or `env`'s). */
const inbox = (args: string[], env: Record<string, string | undefined> = {}) => inboxd(["inbox", ...args], env);

async function inboxd(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // As a user's shell runs it: no npm settings (npx sets some, which the CLI reads as npm having taken options).
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_")));
  const merged: Record<string, string | undefined> = {
    ...base,
    INBOXD_DATA_DIR: "",
    INBOXD_OPERATOR_URL: server.url,
    INBOXD_OPERATOR_TOKEN: OPERATOR,
    ...env,
  };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const child = spawn(process.execPath, ["--import", "tsx", "adapters/node/cli.ts", ...args], {
    cwd: ROOT,
    env: merged as NodeJS.ProcessEnv,
  });
  let stdout = "",
    stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const [code] = await once(child, "exit");
  return { code: code as number | null, stdout, stderr };
}

/** The admin API itself, to set up and to check what a command did. */
async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}/admin/v1/inboxes${path}`, {
    method,
    headers: { authorization: `Bearer ${OPERATOR}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

/** The link a create or sign-in-link printed: alone on the last line of stdout. */
const printedLink = (stdout: string) => stdout.trim().split("\n").pop()!;

/** Opens a sign-in link as a browser would: a working one signs in (303 with a session cookie). */
async function signIn(link: string) {
  const res = await fetch(link, { redirect: "manual" });
  await res.body?.cancel();
  return { status: res.status, cookies: res.headers.getSetCookie() };
}

describe("inboxd inbox", () => {
  it("prints its help: every action, where the token comes from, and why not a flag", async () => {
    const [help, sub] = await Promise.all([
      inboxd(["help", "inbox"]),
      inbox(["create", "--help"], { INBOXD_OPERATOR_TOKEN: undefined }),
    ]);
    expect(help.code).toBe(0);
    for (const action of ["create", "list", "show", "suspend", "resume", "limits", "sign-in-link", "delete"])
      expect(help.stdout).toContain(`inboxd inbox ${action}`);
    expect(help.stdout).toContain("INBOXD_OPERATOR_TOKEN only");
    expect(help.stdout).toContain("shell history");
    expect(help.stdout).toContain("--url URL");
    // A subcommand's --help is the command's, and needs no token.
    expect(sub).toMatchObject({ code: 0, stdout: help.stdout });
  });

  it("create, with an ID or without, prints a sign-in link that signs the person in and when it expires; list shows both", async () => {
    await admin("POST", "", { id: "cli-listed", name: "Listed" });
    const made = await inbox(["create", "cli-alice", "--name", "Alice", "--max-accounts", "2"]);
    expect(made.code).toBe(0);
    const link = printedLink(made.stdout);
    expect(link).toMatch(new RegExp(`^${server.url}/oauth/login\\?code=`));
    expect(made.stderr).toContain(`Created inbox cli-alice ("Alice"); limits: at most 2 accounts.`);
    expect(made.stderr).toContain("Send this sign-in link to the person inbox cli-alice is for");
    expect(made.stderr).toMatch(/It works once, until \d{4}-\d\d-\d\dT[\d:.]+Z \(in 10 minutes\)/);
    const signed = await signIn(link);
    expect(signed.status).toBe(303);
    expect(signed.cookies.length).toBeGreaterThan(0);
    // Once only.
    expect((await signIn(link)).status).not.toBe(303);
    expect((await admin("GET", "/cli-alice")).body).toMatchObject({ name: "Alice", limits: { maxAccounts: 2 } });

    // Without an ID, the API makes one up.
    const generated = await inbox(["create"]);
    expect(generated.code).toBe(0);
    const id = /Created inbox ([a-z0-9-]+)/.exec(generated.stderr)?.[1];
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(printedLink(generated.stdout)).toContain(`code=signin_${id}.`);
    const its = await signIn(printedLink(generated.stdout));
    expect(its.status).toBe(303);
    expect(its.cookies.length).toBeGreaterThan(0);

    const listed = await inbox(["list"]);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STATUS\s+CREATED\s+LIMITS$/);
    expect(lines.find((l) => l.startsWith(`${id} `))).toMatch(/\s-\s+active\s+\S+Z\s+-$/);
    expect(lines.find((l) => l.startsWith("cli-listed "))).toMatch(/Listed\s+active/);
    expect(lines.find((l) => l.startsWith("cli-alice "))).toMatch(/Alice\s+active\s+\S+Z\s+accounts ≤ 2$/);

    const json = await inbox(["list", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual((await admin("GET", "")).body);
  });

  it("list reads the inboxes page by page in ID order; --limit stops short and says where the rest begins, --after goes on from there", async () => {
    for (const id of ["cli-page-a", "cli-page-b", "cli-page-c"]) await admin("POST", "", { id });
    const all = (await inbox(["list", "--json"])).stdout;
    const ids = (JSON.parse(all) as { items: { id: string }[] }).items.map((i) => i.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining(["cli-page-a", "cli-page-b", "cli-page-c"]));
    // The same inboxes when every page holds one, read through the admin API as the command reads it.
    const api = async <T>(method: string, path: string) => {
      const res = await fetch(server.url + path, { method, headers: { authorization: `Bearer ${OPERATOR}` } });
      const text = await res.text();
      return { body: JSON.parse(text) as T, text };
    };
    const paged = await listInboxes(api, { pageSize: 1 });
    expect(paged).toEqual({ items: JSON.parse(all).items, hasMore: false });
    // A limit reached across pages: two inboxes from pages of one, and where the rest begins.
    const two = await listInboxes(api, { pageSize: 1, limit: 2 });
    expect(two).toEqual({ items: JSON.parse(all).items.slice(0, 2), hasMore: true, nextAfter: ids[1] });

    const first = await inbox(["list", "--after", "cli-page-a", "--limit", "1"]);
    expect(first.code).toBe(0);
    const rows = first.stdout.trim().split("\n");
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatch(/^cli-page-b\s/);
    expect(first.stderr).toContain("more inboxes follow: inboxd inbox list --after cli-page-b");
    const rest = JSON.parse((await inbox(["list", "--after", "cli-page-b", "--json"])).stdout);
    expect(rest.items.map((i: { id: string }) => i.id)).toEqual(ids.slice(ids.indexOf("cli-page-b") + 1));
    expect(rest.hasMore).toBe(false);
    const last = ids[ids.length - 1];
    expect((await inbox(["list", "--after", last])).stdout.trim()).toBe(`no inboxes after ${last}`);
  });

  it("sign-in-link prints a new one-time link", async () => {
    await admin("POST", "", { id: "cli-relink" });
    const asked = await inbox(["sign-in-link", "cli-relink"]);
    expect(asked.code).toBe(0);
    expect(asked.stderr).toMatch(/until \S+Z \(in 10 minutes\)/);
    expect((await signIn(printedLink(asked.stdout))).status).toBe(303);
  });

  it("show prints what the inbox holds, its storage readable", async () => {
    expect((await admin("POST", "", { id: "cli-seeded", seed: { chats: 4, messages: 40 } })).status).toBe(201);
    const shown = await inbox(["show", "cli-seeded"]);
    expect(shown.code).toBe(0);
    const usage = (await admin("GET", "/cli-seeded")).body.usage;
    expect(usage).toMatchObject({ chats: 4, messages: 40 });
    expect(shown.stdout).toMatch(/^ID:\s+cli-seeded$/m);
    expect(shown.stdout).toMatch(/^Status:\s+active$/m);
    expect(shown.stdout).toMatch(new RegExp(`^Accounts:\\s+${usage.accounts}$`, "m"));
    expect(shown.stdout).toMatch(/^Chats:\s+4$/m);
    expect(shown.stdout).toMatch(/^Messages:\s+40$/m);
    expect(shown.stdout).toMatch(new RegExp(`^Storage:\\s+\\d+\\.\\d (kB|MB) \\(${usage.storageBytes} bytes\\)$`, "m"));
    expect(shown.stdout).toMatch(/^Requests:\s+\d+ since it was created$/m);
  });

  it("suspend and resume change the inbox's status", async () => {
    await admin("POST", "", { id: "cli-paused" });
    const suspended = await inbox(["suspend", "cli-paused"]);
    expect(suspended).toMatchObject({ code: 0, stderr: "" });
    expect(suspended.stdout).toContain("suspended inbox cli-paused");
    expect((await admin("GET", "/cli-paused")).body.status).toBe("suspended");
    const resumed = await inbox(["resume", "cli-paused", "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id: "cli-paused", status: "active" });
    expect((await admin("GET", "/cli-paused")).body.status).toBe("active");
  });

  it("relay prints a pairing secret that names the inbox, and --off ends the relay", async () => {
    await admin("POST", "", { id: "cli-relayed" });
    const paired = await inbox(["relay", "cli-relayed"]);
    expect(paired.code).toBe(0);
    expect(paired.stdout.trim()).toMatch(/^relay_cli-relayed\.[A-Za-z0-9_-]{43}$/);
    expect(paired.stderr).toContain(`inboxd serve --relay ${server.url}`);
    expect((await admin("GET", "/cli-relayed")).body.relay).toEqual({ since: expect.any(String) });
    const off = await inbox(["relay", "cli-relayed", "--off"]);
    expect(off.code).toBe(0);
    expect((await admin("GET", "/cli-relayed")).body.relay).toBeUndefined();
  });

  it("limits sets the limits given, keeps the others, and none removes one", async () => {
    await admin("POST", "", { id: "cli-limited", limits: { requestsPerSecond: 5 } });
    const set = await inbox(["limits", "cli-limited", "--max-accounts", "3", "--max-storage-bytes", "5MB"]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain("at most 3 accounts, at most 5.0 MB of storage, 5 requests/s per token");
    expect((await admin("GET", "/cli-limited")).body.limits).toEqual({
      requestsPerSecond: 5,
      maxAccounts: 3,
      maxStorageBytes: 5_000_000,
    });
    const removed = await inbox(["limits", "cli-limited", "--max-accounts", "none", "--requests-per-second", "none"]);
    expect(removed.code).toBe(0);
    expect((await admin("GET", "/cli-limited")).body.limits).toEqual({ maxStorageBytes: 5_000_000 });
    const shown = await inbox(["limits", "cli-limited"]);
    expect(shown).toMatchObject({ code: 0, stdout: "limits of inbox cli-limited: at most 5.0 MB of storage\n" });
  });

  it("delete refuses without --yes, saying what it would delete, and deletes with it", async () => {
    await admin("POST", "", { id: "cli-doomed", seed: { chats: 2, messages: 6 } });
    const refused = await inbox(["delete", "cli-doomed"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("deletes the inbox's storage and assets");
    expect(refused.stderr).toMatch(/inbox cli-doomed, \d+ accounts?, 2 chats, 6 messages, .* of storage/);
    expect(refused.stderr).toContain("add --yes");
    expect((await admin("GET", "/cli-doomed")).status).toBe(200);

    const deleted = await inbox(["delete", "cli-doomed", "--yes"]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/^deleted inbox cli-doomed: its storage and \d+ assets?$/m);
    expect((await admin("GET", "/cli-doomed")).status).toBe(404);
    // Now the API says there is none: its message, and the status.
    const gone = await inbox(["show", "cli-doomed"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(
      "refused GET /admin/v1/inboxes/cli-doomed: 404 NOT_FOUND: inbox cli-doomed not found",
    );
  });

  it("a wrong operator token exits 1 with the API's message and status, never the token", async () => {
    const wrong = "wrong-operator-token-1234";
    const refused = await inbox(["list"], { INBOXD_OPERATOR_TOKEN: wrong });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "401 UNAUTHORIZED: the admin API needs the operator's token (INBOXD_OPERATOR_TOKEN) as a bearer token",
    );
    expect(refused.stdout + refused.stderr).not.toContain(wrong);
    expect(refused.stdout + refused.stderr).not.toContain(OPERATOR);
  });

  it("a missing INBOXD_OPERATOR_TOKEN is a usage error (exit 2) that says to set it; an unreachable Worker exits 1", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as { port: number }).port;
    closed.close();
    const [noToken, unreachable] = await Promise.all([
      inbox(["list"], { INBOXD_OPERATOR_TOKEN: undefined }),
      inbox(["list", "--url", `http://127.0.0.1:${port}`]),
    ]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("inboxd: set INBOXD_OPERATOR_TOKEN to the Worker's operator token");
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`could not reach http://127.0.0.1:${port} (GET /admin/v1/inboxes?limit=1000)`);
  });

  // Refused before anything is sent (cli.ts makes a UsageError exit 2, as the child processes above show).
  it("refuses what is not a request it can make, saying why", async () => {
    const refusal = (args: string[], values: InboxFlags = {}, env: Record<string, string | undefined> = {}) =>
      runInbox(args, values, { INBOXD_OPERATOR_URL: server.url, INBOXD_OPERATOR_TOKEN: OPERATOR, ...env }).then(
        () => "done",
        (error: Error) => (error instanceof UsageError ? error.message : `not a usage error: ${error}`),
      );
    expect(await refusal(["rename", "x"])).toBe("unknown inbox action rename");
    expect(await refusal([])).toMatch(/^inbox needs an action: create, list, show/);
    expect(await refusal(["show"])).toBe("inbox show needs an inbox ID (from inbox list)");
    expect(await refusal(["show", "a", "b"])).toBe('inbox show takes one inbox ID, got "a" "b"');
    expect(await refusal(["show", "Not_An_ID"])).toContain("1–32 lower-case letters");
    expect(await refusal(["list"], { yes: true })).toBe("--yes is for inbox delete, not inbox list");
    expect(await refusal(["show", "x"], { after: "a" })).toBe("--after is for inbox list, not inbox show");
    expect(await refusal(["list"], { limit: "0" })).toContain("--limit is how many inboxes to list");
    expect(await refusal(["list"], { after: "Not_An_ID" })).toContain("--after takes an inbox ID");
    expect(await refusal(["show", "x"], { name: "n" })).toBe("--name is for inbox create, not inbox show");
    expect(await refusal(["limits", "x"], { "max-accounts": "-1" })).toBe(
      "--max-accounts must be a whole number ≥ 0, or none, got -1",
    );
    expect(await refusal(["limits", "x"], { "max-storage-bytes": "3 parsecs" })).toContain(
      "--max-storage-bytes must be bytes",
    );
    expect(await refusal(["list"], { token: OPERATOR }, { INBOXD_OPERATOR_TOKEN: undefined })).toContain(
      "taken from INBOXD_OPERATOR_TOKEN only, never from a flag",
    );
    expect(await refusal(["list"], {}, { INBOXD_OPERATOR_URL: undefined })).toContain(
      "--url https://… or INBOXD_OPERATOR_URL",
    );
    expect(await refusal(["list"], { url: "http://inboxd.example.com" })).toContain(
      "would send the operator token in clear",
    );
    expect(await refusal(["list"], { url: `${server.url}/admin` })).toContain("is the Worker's origin alone");
  });
});
