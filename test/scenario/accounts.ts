/**
 * Accounts and contacts: GET /v1/accounts, /v1/accounts/{id}, …/contacts?query=, …/contacts/list.
 */
import BeeperDesktop from "@beeper/desktop-api";
import { describe, expect, it } from "vitest";
import { expectError, expectSdkError } from "./assert.ts";
import type { Account, Page, User } from "../../src/schema/wire.ts";
import { ECHO_ID, enc } from "../kit/common.ts";
import { allChats, duplicates, ids, ok, qs, raw, walk, type Env } from "./kit.ts";

const matches = (u: User, q: string) =>
  [u.id, u.fullName, u.username, u.email, u.phoneNumber].some((f) => f?.toLowerCase().includes(q.toLowerCase()));

export function accountScenarios(env: Env) {
  describe("accounts", () => {
    it("lists the connected accounts (SDK 5 accounts.list)", async () => {
      const accounts = await env.sdk.accounts.list();
      expect(Array.isArray(accounts)).toBe(true);
      expect(accounts.length).toBe(2);
      expect(duplicates(accounts.map((a) => a.accountID))).toEqual([]);
      for (const a of accounts) {
        expect(a.accountID).toMatch(/\S/);
        expect(a.user.id).toMatch(/\S/);
        expect(a.user.isSelf).toBe(true);
        expect(typeof a.bridge.id).toBe("string");
        expect(["cloud", "self-hosted", "local", "platform-sdk"]).toContain(a.bridge.provider);
        expect(typeof a.bridge.type).toBe("string");
        const status = (a as { status?: string }).status;
        if (status !== undefined)
          expect([
            "connected",
            "connecting",
            "backfilling",
            "connection_required",
            "reconnect_required",
            "attention_required",
            "disconnected",
            "disabled",
          ]).toContain(status);
      }
      // Every chat belongs to one of them.
      const known = new Set(accounts.map((a) => a.accountID));
      for (const chat of await allChats(env)) expect(known.has(chat.accountID), chat.accountID).toBe(true);
    });

    it("retrieves one account by ID and 404s an unknown one", async () => {
      for (const a of env.accounts) {
        const one = await ok<Account>(env, `/v1/accounts/${enc(a.accountID)}`);
        expect(one).toEqual(a);
      }
      expectError(await raw(env, `/v1/accounts/${enc("local-nothing_ba_missing")}`), 404);
    });
  });

  describe("contacts", () => {
    it("searches an account's contacts by name, username, phone and exact ID (SDK 5 contacts.search)", async () => {
      const account = env.accounts[0];
      const everyone = (await walk<User>(env, `/v1/accounts/${enc(account.accountID)}/contacts/list`, { limit: 200 }))
        .items;
      const someone = everyone.find((u) => u.id !== ECHO_ID && u.fullName && u.phoneNumber)!;
      expect(someone, "the account has contacts with names and phone numbers").toBeTruthy();

      const first = someone.fullName!.split(" ")[0];
      const byName = await env.sdk.accounts.contacts.search(account.accountID, { query: first.toUpperCase() });
      expect(ids(byName.items)).toContain(someone.id);
      for (const u of byName.items) expect(matches(u, first), JSON.stringify(u)).toBe(true);
      // Everything in the address book that matches is found.
      for (const u of everyone.filter((x) => matches(x, first))) expect(ids(byName.items)).toContain(u.id);

      const byPhone = await env.sdk.accounts.contacts.search(account.accountID, { query: someone.phoneNumber! });
      expect(byPhone.items[0].id).toBe(someone.id);

      const byID = await env.sdk.accounts.contacts.search(account.accountID, { query: someone.id });
      expect(byID.items[0].id).toBe(someone.id);
      expect(duplicates(ids(byID.items))).toEqual([]);

      const echo = await env.sdk.accounts.contacts.search(account.accountID, { query: "echo" });
      expect(ids(echo.items)).toContain(ECHO_ID);

      const none = await env.sdk.accounts.contacts.search(account.accountID, { query: "zzqqxxnobodyhasthisname" });
      expect(none.items).toEqual([]);
    });

    it("refuses a contact search without a query, and for an unknown account", async () => {
      const account = env.accounts[0];
      expectError(await raw(env, `/v1/accounts/${enc(account.accountID)}/contacts`), 400, ["query", "query"]);
      expectError(await raw(env, `/v1/accounts/${enc(account.accountID)}/contacts?query=`), 400, ["query", "query"]);
      await expectSdkError(
        env.sdk.accounts.contacts.search("local-nothing_ba_missing", { query: "a" }),
        BeeperDesktop.NotFoundError,
        404,
      );
    });

    it("lists contacts with cursor pages; every page size walks the same list exactly once (SDK 5 contacts.list)", async () => {
      for (const account of env.accounts) {
        const path = `/v1/accounts/${enc(account.accountID)}/contacts/list`;
        const whole = await ok<Page<User>>(env, path + qs({ limit: 200 }));
        expect(whole.hasMore).toBe(false);
        expect(whole.items.length).toBeGreaterThan(10);
        expect(ids(whole.items)).toContain(ECHO_ID);
        expect(duplicates(ids(whole.items))).toEqual([]);

        const sdkWalk: string[] = [];
        for await (const u of env.sdk.accounts.contacts.list(account.accountID, { limit: 7 })) sdkWalk.push(u.id);
        expect(sdkWalk).toEqual(ids(whole.items));

        const rawWalk = await walk<User>(env, path, { limit: 3 });
        expect(ids(rawWalk.items)).toEqual(ids(whole.items));
        expect(rawWalk.pages.slice(0, -1).every((p) => p.items.length === 3 && p.hasMore)).toBe(true);
        expect(rawWalk.pages.at(-1)!.hasMore).toBe(false);

        // Default page size is 50 (openapi), so with more than 50 contacts the first page is full.
        const first = await ok<Page<User>>(env, path);
        expect(first.items.length).toBe(Math.min(50, whole.items.length));
        expect(first.hasMore).toBe(whole.items.length > 50);
      }
    });

    it("pages back with direction=after and filters with query", async () => {
      const account = env.accounts[1];
      const path = `/v1/accounts/${enc(account.accountID)}/contacts/list`;
      const p1 = await ok<Page<User>>(env, path + qs({ limit: 5 }));
      const p2 = await ok<Page<User>>(env, path + qs({ limit: 5, cursor: p1.oldestCursor }));
      expect(duplicates([...ids(p1.items), ...ids(p2.items)])).toEqual([]);
      const back = await ok<Page<User>>(env, path + qs({ limit: 5, cursor: p2.newestCursor, direction: "after" }));
      expect(ids(back.items)).toEqual(ids(p1.items));

      const whole = (await ok<Page<User>>(env, path + qs({ limit: 200 }))).items;
      const someone = whole.find((u) => u.id !== ECHO_ID && u.fullName)!;
      const last = someone.fullName!.split(" ").at(-1)!.toLowerCase();
      const filtered = await walk<User>(env, path, { limit: 2, query: last });
      expect(ids(filtered.items)).toEqual(ids(whole.filter((u) => matches(u, last))));
    });

    it("refuses bad contact-list parameters and unknown accounts", async () => {
      const path = `/v1/accounts/${enc(env.accounts[0].accountID)}/contacts/list`;
      for (const limit of ["0", "201", "-1", "abc", "1.5"])
        expectError(await raw(env, `${path}?limit=${limit}`), 400, ["query", "limit"]);
      expectError(await raw(env, `${path}?direction=sideways&cursor=x`), 400, ["query", "direction"]);
      expectError(await raw(env, `${path}?cursor=not-a-cursor`), 400);
      // A cursor of another account's list (another query) is refused.
      const other = await ok<Page<User>>(env, `/v1/accounts/${enc(env.accounts[1].accountID)}/contacts/list?limit=2`);
      expectError(await raw(env, `${path}${qs({ cursor: other.oldestCursor })}`), 400);
      expectError(await raw(env, `/v1/accounts/${enc("local-nothing_ba_missing")}/contacts/list`), 404);
    });
  });
}
