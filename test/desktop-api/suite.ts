/**
 * The desktop-api connector on any runtime that serves the app, against a second inboxd daemon as the upstream
 * Desktop API server: inboxd signs in to the upstream, and the upstream's own API plays its owner (sending,
 * editing, reacting there directly). Tests run in order and build on each other, as a person's session would.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResponseChecker } from "../scenario/openapi-check.ts";
import { Browser, consentFields } from "../oauth/kit.ts";
import { connect } from "../events/kit.ts";
import {
  BRIDGE,
  Client,
  closedPort,
  enc,
  imageBytes,
  randomToken,
  startUpstream,
  waitFor,
  type DesktopApiTarget,
  type Runtime,
  type Upstream,
} from "./kit.ts";

interface Account {
  accountID: string;
  status: string;
  loginID: string;
  network?: string;
  user: { id: string; fullName?: string };
  bridge: { id: string; provider: string; type: string };
  via?: { accountID: string; servers: string[] };
}

/** A first load reads this many messages per chat, so that paging back has to reach the upstream. */
const FIRST_BACKFILL = 10;
/** The upstream's OAuth access tokens expire this fast, so that the OAuth test sees the connector refresh one. */
const ACCESS_TOKEN_TTL_MS = 3000;

export function desktopApiSuite(target: DesktopApiTarget) {
  describe(`desktop-api connector on ${target.name}, against another inboxd`, () => {
    let upstream: Upstream;
    let up: Client; // the upstream's owner, on the upstream's own API
    let runtime: Runtime;
    let api: Client;
    let loginID: string;
    /** Upstream account ID → the account here. */
    const accountFor = new Map<string, string>();
    let upAccount: string; // the upstream account most tests use
    let echoHere: string; // its Echo chat, here
    let echoThere: string; // the same chat on the upstream
    const rand = () => Math.random().toString(36).slice(2, 8);
    const tokenLogin = (fields: Record<string, string>, reconnect?: { loginID: string }) =>
      api.login(fields, reconnect, { bridgeID: BRIDGE, flowID: "token" });
    const texts = async (client: Client, chatID: string) => (await client.messages(chatID)).map((m) => m.text ?? "");
    const accountsOf = async (client: Client) => (await client.sdk.accounts.list()) as unknown as Account[];
    const once = async (client: Client, chatID: string, text: string) =>
      (await texts(client, chatID)).filter((t) => t === text).length;

    beforeAll(async () => {
      upstream = await startUpstream({ accessTokenTtlMs: ACCESS_TOKEN_TTL_MS });
      up = upstream.api;
      runtime = await target.start(randomToken(), { firstBackfill: FIRST_BACKFILL });
      api = new Client(runtime);
      api.spec = new ResponseChecker(await api.ok("GET", "/v1/spec"));
    });

    afterAll(async () => {
      await runtime?.stop();
      await upstream?.stop();
    });

    it("lists the desktop-api bridge with an OAuth and an access-token flow", async () => {
      const bridge = await api.ok("GET", `/v1/bridges/${BRIDGE}`);
      expect(bridge).toMatchObject({ id: BRIDGE, type: "desktop-api", status: "available" });
      const flows = await api.ok("GET", `/v1/bridges/${BRIDGE}/login-flows`);
      expect(flows.items.map((f: { id: string }) => f.id)).toEqual(["oauth", "token"]);
    });

    it("fails a login to what is not a Desktop API server, to a closed port, and with a wrong token, saying which", async () => {
      const notAServer = await tokenLogin({ baseURL: `${upstream.url}/v1/spec`, accessToken: upstream.token });
      expect(notAServer).toMatchObject({ status: "failed", error: { code: "not_a_desktop_api" } });
      const unreachable = await tokenLogin({
        baseURL: `http://127.0.0.1:${await closedPort()}`,
        accessToken: upstream.token,
      });
      expect(unreachable).toMatchObject({ status: "failed", error: { code: "unreachable" } });
      const badToken = await tokenLogin({ baseURL: upstream.url, accessToken: "inbx_not_a_token_of_that_server" });
      expect(badToken).toMatchObject({ status: "failed", error: { code: "invalid_token" } });
      const noAddress = await tokenLogin({ baseURL: "", accessToken: upstream.token });
      expect(noAddress).toMatchObject({ status: "failed", error: { code: "invalid_server" } });
      expect((await accountsOf(api)).filter((a) => a.bridge.id === BRIDGE)).toEqual([]);
    });

    it("signs in with a token: every upstream account appears under one login, with its user, network and bridge", async () => {
      const session = await tokenLogin({ baseURL: upstream.url, accessToken: upstream.token });
      expect(session.status).toBe("complete");
      loginID = session.loginID;
      const upstreamAccounts = await accountsOf(up);
      expect(upstreamAccounts.length).toBe(2);
      const here = await waitFor(
        "every account connected",
        async () => {
          const list = (await accountsOf(api)).filter((a) => a.bridge.id === BRIDGE);
          return list.length === 2 && list.every((a) => a.status === "connected") ? list : undefined;
        },
        30_000,
      );
      for (const theirs of upstreamAccounts) {
        const mine = here.find((a) => a.via?.accountID === theirs.accountID)!;
        expect(mine, `an account for ${theirs.accountID}`).toBeDefined();
        expect(mine).toMatchObject({
          loginID,
          network: theirs.network,
          user: { id: theirs.user.id, fullName: theirs.user.fullName },
          bridge: { id: BRIDGE, provider: "self-hosted", type: theirs.bridge.type },
          via: { bridge: theirs.bridge, accountID: theirs.accountID, servers: [upstream.instanceID] },
        });
        accountFor.set(theirs.accountID, mine.accountID);
      }
      const login = await api.ok("GET", `/v1/bridges/${BRIDGE}/logins/${loginID}`);
      expect(login.accountIDs.sort()).toEqual([...accountFor.values()].sort());
      upAccount = upstreamAccounts[0].accountID;
    });

    it("loads every upstream chat, and pages a long chat's older messages from the upstream", async () => {
      const theirs = (await up.sdk.chats.list({ accountIDs: [upAccount] })).items;
      const mine = await waitFor("every chat here", async () => {
        const items = (await api.sdk.chats.list({ accountIDs: [accountFor.get(upAccount)!] })).items;
        return items.length === theirs.length ? items : undefined;
      });
      expect(mine.map((c) => c.title).sort()).toEqual(theirs.map((c) => c.title).sort());
      echoThere = theirs.find((c) => c.title === "Echo")!.id;
      echoHere = mine.find((c) => c.title === "Echo")!.id;
      // The chat with the most messages: more than a first load reads, so most of it comes through fetchHistory.
      let longest = { id: "", count: 0, title: "" };
      for (const chat of theirs) {
        const count = (await up.messages(chat.id)).length;
        if (count > longest.count) longest = { id: chat.id, count, title: chat.title };
      }
      expect(longest.count).toBeGreaterThan(FIRST_BACKFILL * 3);
      const longHere = mine.find((c) => c.title === longest.title)!;
      const upstreamView = (await up.messages(longest.id)).map((m) => [m.senderID, m.text, m.timestamp]);
      const localView = (await api.messages(longHere.id)).map((m) => [m.senderID, m.text, m.timestamp]);
      expect(localView).toEqual(upstreamView);
    });

    it("sends through the upstream and gets Echo's answer back; what the upstream's owner sends there arrives once", async () => {
      const text = `ping ${rand()}`;
      const sent = await api.sdk.messages.send(echoHere, { text });
      await api.messageWith(echoHere, (m) => m.text === `Echo: ${text}`, "Echo's answer, here", 15_000);
      await up.messageWith(echoThere, (m) => m.text === text && m.isSender === true, "the message on the upstream");
      const mine = await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: echoHere });
      expect(mine.sendStatus).toMatchObject({ status: "SUCCESS" });
      const fromOwner = `from the upstream ${rand()}`;
      await up.sdk.messages.send(echoThere, { text: fromOwner });
      const arrived = await api.messageWith(echoHere, (m) => m.text === fromOwner, "the owner's message, here", 15_000);
      expect(arrived.isSender).toBe(true);
      await api.messageWith(echoHere, (m) => m.text === `Echo: ${fromOwner}`, "Echo's answer to it, here", 15_000);
      for (const t of [text, `Echo: ${text}`, fromOwner, `Echo: ${fromOwner}`]) {
        expect(await once(api, echoHere, t), `${t} here`).toBe(1);
        expect(await once(up, echoThere, t), `${t} upstream`).toBe(1);
      }
    });

    it("carries edits, reactions and deletes both ways", async () => {
      const mineText = `to edit ${rand()}`;
      const sent = await api.sdk.messages.send(echoHere, { text: mineText });
      await waitFor(
        "the send to settle",
        async () =>
          (await api.sdk.messages.retrieve(sent.pendingMessageID, { chatID: echoHere })).sendStatus?.status ===
          "SUCCESS",
      );
      await api.sdk.messages.update(sent.pendingMessageID, { chatID: echoHere, text: `${mineText}, edited here` });
      const upMine = await up.messageWith(
        echoThere,
        (m) => m.text === `${mineText}, edited here`,
        "the edit on the upstream",
      );
      // The upstream's owner edits their own message there.
      await up.sdk.messages.update(upMine.id, { chatID: echoThere, text: `${mineText}, edited upstream` });
      const edited = await api.messageWith(
        echoHere,
        (m) => m.text === `${mineText}, edited upstream`,
        "the upstream's edit, here",
      );
      expect(edited.editedTimestamp).toBeDefined();
      // Reactions: one put here, one put there; removing it there removes it here.
      const echoAnswer = await api.messageWith(
        echoHere,
        (m) => m.text === `Echo: ${mineText}`,
        "Echo's answer",
        15_000,
      );
      const echoAnswerThere = await up.messageWith(
        echoThere,
        (m) => m.text === `Echo: ${mineText}`,
        "Echo's answer upstream",
      );
      await api.sdk.chats.messages.reactions.add(echoAnswer.id, { chatID: echoHere, reactionKey: "👍" });
      await up.messageWith(
        echoThere,
        (m) => m.id === echoAnswerThere.id && (m.reactions ?? []).some((r) => r.reactionKey === "👍"),
        "👍 on the upstream",
      );
      await up.sdk.chats.messages.reactions.add(echoAnswerThere.id, { chatID: echoThere, reactionKey: "🎉" });
      await api.messageWith(
        echoHere,
        (m) =>
          m.id === echoAnswer.id &&
          (m.reactions ?? [])
            .map((r) => r.reactionKey)
            .sort()
            .join() === ["🎉", "👍"].sort().join(),
        "🎉 and 👍 here",
      );
      await up.sdk.chats.messages.reactions.delete("🎉", { chatID: echoThere, messageID: echoAnswerThere.id });
      await api.messageWith(
        echoHere,
        (m) => m.id === echoAnswer.id && (m.reactions ?? []).map((r) => r.reactionKey).join() === "👍",
        "only 👍 left here",
      );
      // Deletes: this side's goes upstream; the upstream's comes here.
      await api.sdk.messages.delete(edited.id, { chatID: echoHere });
      await waitFor(
        "the delete on the upstream",
        async () => (await once(up, echoThere, `${mineText}, edited upstream`)) === 0,
      );
      const doomed = `to delete upstream ${rand()}`;
      const doomedSent = await up.sdk.messages.send(echoThere, { text: doomed });
      await api.messageWith(echoHere, (m) => m.text === doomed, "the message to delete, here", 15_000);
      await up.sdk.messages.delete(doomedSent.pendingMessageID, { chatID: echoThere });
      await waitFor("the upstream's delete, here", async () => (await once(api, echoHere, doomed)) === 0);
    });

    it("sends an image up and shows the upstream's image here, both byte-exact", async () => {
      const bytes = imageBytes();
      const upload = await api.sdk.assets.upload({
        file: new File([bytes as BlobPart], "photo.png", { type: "image/png" }),
      });
      await api.sdk.messages.send(echoHere, { text: "a picture", attachment: { uploadID: upload.uploadID! } });
      const there = await up.messageWith(
        echoThere,
        (m) => m.text === "a picture" && (m.attachments ?? []).length === 1,
        "the image on the upstream",
        15_000,
      );
      const upBytes = new Uint8Array(
        await (await up.sdk.assets.serve({ url: there.attachments![0].id! }).asResponse()).arrayBuffer(),
      );
      expect(Buffer.from(upBytes).equals(Buffer.from(bytes))).toBe(true);
      // The other way: the upstream's owner sends one there.
      const other = imageBytes();
      const upUpload = await up.sdk.assets.upload({
        file: new File([other as BlobPart], "theirs.png", { type: "image/png" }),
      });
      await up.sdk.messages.send(echoThere, { text: "their picture", attachment: { uploadID: upUpload.uploadID! } });
      const here = await api.messageWith(
        echoHere,
        (m) => m.text === "their picture" && (m.attachments ?? []).length === 1,
        "their image, here",
        15_000,
      );
      const url = here.attachments![0].id!;
      expect(url).toMatch(/^mxc:\/\/desktop-api\./);
      const served = await fetch(`${runtime.url}/v1/assets/serve?url=${enc(url)}`, {
        headers: { authorization: `Bearer ${runtime.token}` },
      });
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(other))).toBe(true);
    });

    it("round-trips archive, mute, pin, read state and reminders", async () => {
      await api.sdk.chats.update(echoHere, { isPinned: true, isMuted: true });
      await waitFor("pin and mute on the upstream", async () => {
        const c = await up.sdk.chats.retrieve(echoThere);
        return c.isPinned === true && c.isMuted === true;
      });
      await api.sdk.chats.archive(echoHere, { archived: true });
      await waitFor(
        "archived on the upstream",
        async () => (await up.sdk.chats.retrieve(echoThere)).isArchived === true,
      );
      // The upstream's owner undoes all three there: each comes back here.
      await up.sdk.chats.update(echoThere, { isPinned: false, isMuted: false, isArchived: false });
      await waitFor("the upstream's changes, here", async () => {
        const c = await api.sdk.chats.retrieve(echoHere);
        return !c.isPinned && !c.isMuted && !c.isArchived;
      });
      // Unread messages there, read here.
      await up.sdk.chats.markUnread(echoThere);
      await waitFor(
        "unread here",
        async () =>
          ((await api.sdk.chats.retrieve(echoHere)).unreadCount ?? 0) > 0 ||
          (await api.raw("GET", `/v1/chats/${enc(echoHere)}`)).body.isUnread === true,
      );
      await api.sdk.chats.markRead(echoHere);
      await waitFor("read on the upstream", async () => {
        const c = (await up.ok("GET", `/v1/chats/${enc(echoThere)}`)) as { unreadCount: number; isUnread?: boolean };
        return c.unreadCount === 0 && !c.isUnread;
      });
      const at = Date.now() + 3_600_000;
      await api.sdk.chats.reminders.create(echoHere, { reminder: { remindAt: new Date(at).toISOString() } } as never);
      await waitFor("the reminder on the upstream", async () => {
        const c = (await up.sdk.chats.retrieve(echoThere)) as unknown as {
          reminder?: { remindAt?: string; remindAtMs?: number };
        };
        return c.reminder && (c.reminder.remindAtMs === at || Date.parse(c.reminder.remindAt ?? "") === at);
      });
      await api.sdk.chats.reminders.delete(echoHere);
      await waitFor(
        "the reminder gone upstream",
        async () => !((await up.sdk.chats.retrieve(echoThere)) as unknown as { reminder?: unknown }).reminder,
      );
    });

    it("lists the upstream account's contacts and starts a chat with one", async () => {
      const account = accountFor.get(upAccount)!;
      const theirs = [];
      for await (const u of up.sdk.accounts.contacts.list(upAccount)) theirs.push(u.id);
      const mine = [];
      for await (const u of api.sdk.accounts.contacts.list(account)) mine.push(u.id);
      expect(mine.sort()).toEqual(theirs.sort());
      const someone = theirs.find((id) => !id.startsWith("@echo"))!;
      const started = (await api.sdk.chats.start({
        accountID: account,
        user: { id: someone },
      } as never)) as unknown as { chatID: string };
      const chat = await api.sdk.chats.retrieve(started.chatID);
      const text = `hello ${rand()}`;
      await api.sdk.messages.send(chat.id, { text });
      await waitFor("the message in a chat with that contact upstream", async () => {
        for (const c of (await up.sdk.chats.list({ accountIDs: [upAccount] })).items) {
          if (c.type !== "single" || !(c.participants?.items ?? []).some((p) => p.id === someone)) continue;
          if ((await texts(up, c.id)).includes(text)) return true;
        }
        return false;
      });
    });

    it("passes typing through: Echo, upstream, mirrors it, and that comes back here on /v1/ws", async () => {
      const conn = await connect(runtime.url, runtime.token, [echoHere]);
      try {
        await api.ok("POST", `/v1/chats/${enc(echoHere)}/typing`, { state: "typing" });
        const frame = await conn.next(
          (f) => f.type === "typing" && f.chatID === echoHere && (f.typing as { state: string }).state === "typing",
          { what: "Echo typing, here", timeoutMs: 10_000 },
        );
        expect((frame.typing as { participantID: string }).participantID).toMatch(/^@echo:/);
      } finally {
        conn.close();
      }
    });

    it("creates a group on the upstream, and sets a chat's disappearing-message timer and picture there", async () => {
      const account = accountFor.get(upAccount)!;
      const contacts = [];
      for await (const u of up.sdk.accounts.contacts.list(upAccount))
        if (!u.id.startsWith("@echo")) contacts.push(u.id);
      const title = `Group ${rand()}`;
      const created = (await api.sdk.chats.create({
        accountID: account,
        type: "group",
        participantIDs: contacts.slice(0, 2),
        title,
      } as never)) as unknown as { chatID: string };
      expect((await api.sdk.chats.retrieve(created.chatID)).title).toBe(title);
      await waitFor("the group on the upstream", async () =>
        (await up.sdk.chats.list({ accountIDs: [upAccount] })).items.some(
          (c) => c.title === title && c.type === "group",
        ),
      );
      await api.sdk.chats.update(echoHere, { messageExpirySeconds: 3600 });
      expect((await up.ok("GET", `/v1/chats/${enc(echoThere)}`)).messageExpirySeconds).toBe(3600);
      await api.sdk.chats.update(echoHere, { messageExpirySeconds: null });
      // A picture set here goes up as the upstream's own upload: the network there has its bytes.
      const bytes = imageBytes();
      const upload = await api.sdk.assets.upload({
        file: new File([bytes as BlobPart], "group.png", { type: "image/png" }),
      });
      await api.sdk.chats.update(echoHere, { imgURL: upload.uploadID! });
      // The PATCH answered once the upstream had it; Echo reports the chat's settings on the sandbox network (the
      // chat's first such report).
      await up.sdk.messages.send(echoThere, { text: "!settings" });
      const reported = await up.messageWith(
        echoThere,
        (m) => m.senderID.startsWith("@echo") && /settings \{/.test(m.text ?? ""),
        "Echo's report of the settings",
      );
      expect(JSON.parse(/settings (\{.*\})$/.exec(reported.text!)![1]).picture).toMatchObject({
        fileName: "group.png",
        mimeType: "image/png",
        bytes: bytes.length,
      });
      expect((await up.ok("GET", `/v1/chats/${enc(echoThere)}`)).imgURL).toBeDefined();
    });

    it("loses and doubles nothing across an upstream restart and a restart of this side", async () => {
      const before = await texts(api, echoHere);
      await upstream.restart();
      const afterUpstream = `after the upstream restarted ${rand()}`;
      await up.sdk.messages.send(echoThere, { text: afterUpstream });
      await api.messageWith(
        echoHere,
        (m) => m.text === `Echo: ${afterUpstream}`,
        "traffic after the upstream's restart",
        30_000,
      );
      // More than a first load reads (with Echo's answers): only resuming the upstream's event stream brings them all.
      const whileDown = Array.from(
        { length: FIRST_BACKFILL / 2 + 1 },
        (_, i) => `while this side was down ${i} ${rand()}`,
      );
      await runtime.restart(async () => {
        for (const text of whileDown) await up.sdk.messages.send(echoThere, { text });
        await up.messageWith(
          echoThere,
          (m) => m.text === `Echo: ${whileDown.at(-1)}`,
          "Echo's answers upstream",
          15_000,
        );
      });
      await waitFor(
        "what was sent while this side was down",
        async () => (await texts(api, echoHere)).includes(`Echo: ${whileDown.at(-1)}`),
        30_000,
      );
      // Same accounts (IDs kept), and the chat's messages as the upstream has them: nothing missing, nothing twice.
      // (Messages written on both sides at once may sort differently on each: each server orders by arrival.)
      const accounts = (await accountsOf(api))
        .filter((a) => a.bridge.id === BRIDGE)
        .map((a) => a.accountID)
        .sort();
      expect(accounts).toEqual([...accountFor.values()].sort());
      const upstreamView = await texts(up, echoThere);
      await waitFor(
        "the chat's messages as the upstream has them",
        async () => JSON.stringify((await texts(api, echoHere)).sort()) === JSON.stringify([...upstreamView].sort()),
        15_000,
      );
      // What arrived while this side was down, in the upstream's order.
      const gap = (view: string[]) => view.filter((t) => whileDown.some((w) => t.endsWith(w)));
      expect(gap(await texts(api, echoHere))).toEqual(gap(upstreamView));
      expect((await texts(api, echoHere)).length).toBeGreaterThan(before.length);
    }, 120_000);

    it("shows how an account stands upstream: one that needs a new login there says so here", async () => {
      const account = accountFor.get(upAccount)!;
      await up.sdk.messages.send(echoThere, { text: "!status reconnect_required signed out on the phone" });
      const shown = await waitFor(
        "the upstream's status, here",
        async () => {
          const a = (await accountsOf(api)).find((x) => x.accountID === account) as Account & { statusText?: string };
          return a.status === "reconnect_required" ? a : undefined;
        },
        15_000,
      );
      expect(shown.statusText).toBe("upstream: signed out on the phone");
      await up.sdk.messages.send(echoThere, { text: "!status connected" });
      await waitFor(
        "connected again, here",
        async () => (await accountsOf(api)).find((x) => x.accountID === account)?.status === "connected",
        15_000,
      );
    });

    it("adds an account the upstream gains, and removes one it loses", async () => {
      const started = await up.ok("POST", "/v1/bridges/local-sandbox/login-sessions", { flowID: "password" });
      const code = await up.ok(
        "POST",
        `/v1/bridges/local-sandbox/login-sessions/${started.loginSessionID}/steps/${started.currentStep.stepID}`,
        { type: "user_input", fields: { username: `grace${rand()}`, password: "sandbox" } },
      );
      const done = await up.ok(
        "POST",
        `/v1/bridges/local-sandbox/login-sessions/${started.loginSessionID}/steps/${code.currentStep.stepID}`,
        { type: "user_input", fields: { code: "123456" } },
      );
      expect(done.status).toBe("complete");
      const added = await waitFor(
        "the new upstream account, here",
        async () => {
          const list = await accountsOf(api);
          return list.find((a) => a.via?.accountID === done.accountID && a.status === "connected");
        },
        30_000,
      );
      expect(added.loginID).toBe(loginID);
      await waitFor("its Echo chat, here", async () =>
        (await api.sdk.chats.list({ accountIDs: [added.accountID] })).items.some((c) => c.title === "Echo"),
      );
      await up.ok("POST", `/v1/bridges/local-sandbox/logins/${done.loginID}/remove`, { scope: "current-device" });
      await waitFor(
        "the account gone here",
        async () => !(await accountsOf(api)).some((a) => a.accountID === added.accountID),
        30_000,
      );
      expect((await api.sdk.chats.list({ accountIDs: [added.accountID] }).catch(() => ({ items: [] }))).items).toEqual(
        [],
      );
    });

    it("refuses a login that would loop: to itself, and from an upstream back to it", async () => {
      const self = await tokenLogin({ baseURL: runtime.url, accessToken: runtime.token });
      expect(self).toMatchObject({ status: "failed", error: { code: "loop" } });
      // The upstream pointed back at this inboxd, which gets its accounts from the upstream.
      const back = await up.login({ baseURL: runtime.url, accessToken: runtime.token }, undefined, {
        bridgeID: BRIDGE,
        flowID: "token",
      });
      expect(back).toMatchObject({ status: "failed", error: { code: "loop" } });
      expect((await accountsOf(up)).some((a) => a.bridge.id === BRIDGE)).toBe(false);
    });

    it("signs in with OAuth: the consent approved with the HTTP steps a browser takes, or denied", async () => {
      const oauthLogin = async (decision: "approve" | "deny") => {
        const started = await api.ok("POST", `/v1/bridges/${BRIDGE}/login-sessions`, { flowID: "oauth", loginID });
        const consent = await api.ok(
          "POST",
          `/v1/bridges/${BRIDGE}/login-sessions/${started.loginSessionID}/steps/${started.currentStep.stepID}`,
          { type: "user_input", fields: { baseURL: upstream.url } },
        );
        expect(consent.status).toBe("waiting_for_cookies");
        const step = consent.currentStep;
        expect(step).toMatchObject({ type: "cookies", stepID: "desktop-api.oauth.consent" });
        // The browser: the consent page, the owner's sign-in there, the decision; it lands on the redirect URI.
        const browser = new Browser(upstream.url);
        let page = await browser.request(step.url);
        if (/Sign in to inboxd/.test(page.text)) {
          const signedIn = await browser.request("/oauth/login", {
            form: { code: upstream.token, next: step.url.slice(upstream.url.length) },
          });
          page = await browser.request(signedIn.headers.get("location")!);
        }
        expect(page.status).toBe(200);
        const decided = await browser.request("/oauth/authorize", { form: { ...consentFields(page.text), decision } });
        const landedOn = decided.headers.get("location")!;
        expect(landedOn).toMatch(new RegExp(step.expectedFinalURLRegex));
        const submitted = await api.ok(
          "POST",
          `/v1/bridges/${BRIDGE}/login-sessions/${started.loginSessionID}/steps/${step.stepID}`,
          { type: "cookies", fields: {}, lastURL: landedOn },
        );
        return submitted.status === "waiting_for_cookies"
          ? await api.ok("GET", `/v1/bridges/${BRIDGE}/login-sessions/${started.loginSessionID}`)
          : submitted;
      };
      expect(await oauthLogin("deny")).toMatchObject({ status: "failed", error: { code: "consent_denied" } });
      const approved = await waitFor("the OAuth login", async () => {
        const s = await oauthLogin("approve");
        return s.status === "complete" ? s : undefined;
      });
      expect(approved.loginID).toBe(loginID);
      const apps = await up.ok("GET", "/v1/authorized-apps");
      expect(apps.items.some((a: { clientName: string }) => a.clientName === "inboxd")).toBe(true);
      // Signed in again in place: the same accounts, and traffic goes on with the new token.
      await waitFor(
        "connected again",
        async () =>
          (await accountsOf(api)).filter((a) => a.bridge.id === BRIDGE).every((a) => a.status === "connected"),
        30_000,
      );
      expect(
        (await accountsOf(api))
          .filter((a) => a.bridge.id === BRIDGE)
          .map((a) => a.accountID)
          .sort(),
      ).toEqual([...accountFor.values()].sort());
      const text = `after OAuth ${rand()}`;
      await api.sdk.messages.send(echoHere, { text });
      await api.messageWith(echoHere, (m) => m.text === `Echo: ${text}`, "Echo's answer after OAuth", 15_000);
      // Once the access token has expired: the first call refreshes it (the refresh token rotates), and the new
      // pair is what a restart signs in with.
      await new Promise((r) => setTimeout(r, ACCESS_TOKEN_TTL_MS + 500));
      const later = `after the token expired ${rand()}`;
      await api.sdk.messages.send(echoHere, { text: later });
      await api.messageWith(
        echoHere,
        (m) => m.text === `Echo: ${later}`,
        "Echo's answer with a refreshed token",
        15_000,
      );
      await runtime.restart();
      await waitFor(
        "connected after the restart",
        async () =>
          (await accountsOf(api)).filter((a) => a.bridge.id === BRIDGE).every((a) => a.status === "connected"),
        30_000,
      );
      await new Promise((r) => setTimeout(r, ACCESS_TOKEN_TTL_MS + 500));
      const afterRestart = `after a restart and another expiry ${rand()}`;
      await api.sdk.messages.send(echoHere, { text: afterRestart });
      await api.messageWith(
        echoHere,
        (m) => m.text === `Echo: ${afterRestart}`,
        "Echo's answer after the restart",
        15_000,
      );
      expect((await accountsOf(api)).filter((a) => a.bridge.id === BRIDGE).every((a) => a.status === "connected")).toBe(
        true,
      );
    }, 90_000);

    it("met, on the upstream, the official 5.0.0 document with every answer of its operations", () => {
      // The upstream's client checks each answer as it comes (kit.ts): here, that it did, across the suite's calls.
      expect([...up.spec!.checked.keys()].length).toBeGreaterThan(10);
    });
  });
}
