#!/usr/bin/env python3
"""inboxd from Python 3's standard library alone (urllib.request, json): no packages to install.

Lists the first chats, searches messages, and sends one message to the sandbox's Echo chat.

    INBOXD_TOKEN=inbx_... python3 examples/python_stdlib.py [search words]

INBOXD_URL defaults to http://127.0.0.1:23373. Exits 1 when a request fails, printing inboxd's error body.
"""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

BASE = os.environ.get("INBOXD_URL") or os.environ.get("API") or "http://127.0.0.1:23373".rstrip("/")
TOKEN = os.environ.get("INBOXD_TOKEN") or os.environ.get("TOKEN")  # the README's names work too
ECHO = "@echo:sandbox.invalid"


def api(method, path, query=None, body=None):
    """One request; answers the decoded JSON body (None for 204). Raises urllib.error.HTTPError on 4xx/5xx."""
    url = BASE + path
    if query:
        url += "?" + urllib.parse.urlencode(query, doseq=True)
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", "Bearer " + TOKEN)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode("utf-8")
        return json.loads(text) if text else None


def chat_path(chat_id):
    # Chat IDs hold characters such as "!" and ":"; quote them whole.
    return "/v1/chats/" + urllib.parse.quote(chat_id, safe="")


def main():
    if not TOKEN:
        print("Set INBOXD_TOKEN to an access token (`npm run -s inboxd -- token create` prints one).", file=sys.stderr)
        return 2
    words = " ".join(sys.argv[1:]) or "coffee"

    chats = api("GET", "/v1/chats")
    print("chats (first page, %d):" % len(chats["items"]))
    for chat in chats["items"][:5]:
        print("  %s  %s  unread=%d" % (chat["id"], chat["title"], chat["unreadCount"]))

    found = api("GET", "/v1/messages/search", {"query": words, "limit": 5})
    print("messages matching %r: %d shown, more: %s" % (words, len(found["items"]), found["hasMore"]))
    for message in found["items"]:
        print("  %s %s: %s" % (message["timestamp"], message.get("senderName", message["senderID"]), message.get("text", "")))

    echo = next(
        (c for c in api("GET", "/v1/chats/search", {"query": "echo", "type": "single"})["items"]
         if any(p["id"] == ECHO for p in c["participants"]["items"])),
        None,
    )
    if echo is None:
        print("no Echo chat: connect a sandbox account first (inboxd seed, or the local-sandbox login)", file=sys.stderr)
        return 1
    sent = api("POST", chat_path(echo["id"]) + "/messages", body={"text": "hello from Python"})
    message = api("GET", chat_path(echo["id"]) + "/messages/" + urllib.parse.quote(sent["pendingMessageID"], safe=""))
    print("sent %s to %s: %s (%s)" % (message["id"], echo["title"], message["text"], message["sendStatus"]["status"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except urllib.error.HTTPError as error:
        print("failed: HTTP %d %s" % (error.code, error.read().decode("utf-8", "replace")), file=sys.stderr)
        sys.exit(1)
    except urllib.error.URLError as error:
        print("failed: cannot reach %s: %s" % (BASE, error.reason), file=sys.stderr)
        sys.exit(1)
