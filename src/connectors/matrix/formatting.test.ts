import { describe, expect, it } from "vitest";
import { htmlToText, markdownToHTML, stripReplyFallback } from "./formatting.ts";

describe("formatted_body as text", () => {
  it("keeps links (with their address where the text differs), mentions as names, and code", () => {
    const html =
      'Hi <a href="https://matrix.to/#/@bob:example.org">Bob</a>, see <a href="https://example.org/a">the page</a> or <a href="https://example.org/b">https://example.org/b</a>; run <code>a &lt; b</code>';
    expect(htmlToText(html)).toBe("Hi Bob, see the page (https://example.org/a) or https://example.org/b; run `a < b`");
  });

  it("drops the reply fallback and turns blocks, breaks, lists and code blocks into lines", () => {
    const html =
      "<mx-reply><blockquote>quoted <b>old</b> text</blockquote></mx-reply><p>first</p><p>second<br>line</p><ol><li>one</li><li>two</li></ol><pre><code>let x = 1;\n</code></pre>";
    expect(htmlToText(html)).toBe("first\nsecond\nline\n1. one\n2. two\n```\nlet x = 1;\n```");
  });

  it("does not add an address for links with unsafe schemes", () => {
    expect(htmlToText('<a href="javascript:alert(1)">click</a>')).toBe("click");
  });

  it("reduces unknown or broken markup to its text, and drops scripts", () => {
    expect(htmlToText("<font color=red>red <span>text</font><script>evil()</script><div>next")).toBe("red text\nnext");
  });
});

describe("the plain body's reply fallback", () => {
  it("strips the quoted lines and the blank line after them", () => {
    expect(stripReplyFallback("> <@a:b> hi\n> there\n\nmy answer\n> not a fallback")).toBe(
      "my answer\n> not a fallback",
    );
  });

  it("leaves a body without a fallback alone", () => {
    expect(stripReplyFallback("plain")).toBe("plain");
  });
});

describe("markdown to formatted_body", () => {
  it("sends plain text (line breaks included) without formatted_body", () => {
    expect(markdownToHTML("hello there")).toBeUndefined();
    expect(markdownToHTML("one\ntwo")).toBeUndefined();
  });

  it("renders inline formatting without a paragraph around it, and blocks as HTML", () => {
    expect(markdownToHTML("hello **bob**")).toBe("hello <strong>bob</strong>");
    expect(markdownToHTML("# Title\n\nbody")).toBe("<h1>Title</h1>\n<p>body</p>");
  });

  it("escapes raw HTML instead of passing it through", () => {
    expect(markdownToHTML("**x** <img src=x onerror=alert(1)>")).toBe(
      "<strong>x</strong> &lt;img src=x onerror=alert(1)&gt;",
    );
  });
});
