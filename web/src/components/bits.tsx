import { useEffect, useState } from "preact/hooks";
import { assetURL, type Message } from "../api.ts";
import { initials } from "../format.ts";

export function Avatar({ name }: { name: string }) {
  let hue = 0;
  for (const c of name) hue = (hue * 31 + c.charCodeAt(0)) % 360;
  return (
    <span class="avatar" aria-hidden="true" style={{ background: `hsl(${hue} 45% 42%)` }}>
      {initials(name)}
    </span>
  );
}

/**
 * Which network a chat is on, as a small badge: the network's name as text (never colour alone), with the words
 * "Network:" for screen readers and as a tooltip. Stateless, from the chat's own `network` field: the virtualised list
 * renders it in every row as often as it likes, without a fetch.
 */
export function NetworkBadge({ network }: { network: string }) {
  return (
    <span class="network" title={`Network: ${network}`} data-network={network}>
      <span class="sr-only">Network: </span>
      {network}
    </span>
  );
}

/** One line for a message in a list. */
export function preview(message: Message): string {
  const who = message.isSender ? "You: " : "";
  if (message.text) return who + message.text;
  const kind = message.attachments?.[0]?.type;
  return (
    who +
    (kind === "img"
      ? "Photo"
      : kind === "video"
        ? "Video"
        : kind === "audio"
          ? "Audio"
          : message.attachments?.length
            ? "File"
            : message.type.toLowerCase())
  );
}

/** An attachment's bytes as a blob: URL (fetched with the token), or undefined while loading. */
export function useAsset(srcURL: string | undefined): { url?: string; error?: string } {
  const [state, setState] = useState<{ url?: string; error?: string }>({});
  useEffect(() => {
    if (!srcURL) return;
    let live = true;
    assetURL(srcURL).then(
      (url) => live && setState({ url }),
      (e) => live && setState({ error: e instanceof Error ? e.message : String(e) }),
    );
    return () => {
      live = false;
    };
  }, [srcURL]);
  return state;
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
