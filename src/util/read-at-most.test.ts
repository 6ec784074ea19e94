import { describe, expect, it } from "vitest";
import { readAtMost } from "./read-at-most.ts";

const streamOf = (chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });

describe("readAtMost", () => {
  it("reads a stream whole when it fits, up to exactly the limit", async () => {
    const bytes = await readAtMost(streamOf(["ab", "cd", "e"]), 5);
    expect(new TextDecoder().decode(bytes)).toBe("abcde");
  });

  it("answers undefined past the limit, and cancels the stream", async () => {
    let cancelled = false;
    const pulls = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(4)),
      cancel: () => void (cancelled = true),
    });
    expect(await readAtMost(pulls, 10)).toBeUndefined();
    expect(cancelled).toBe(true);
  });
});
