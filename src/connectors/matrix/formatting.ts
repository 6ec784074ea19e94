import { Parser } from "htmlparser2";
import { Marked, type Tokens } from "marked";

/**
 * Matrix's `formatted_body` (the HTML subset of the spec) as plain text: links kept (as "text (url)" where the text
 * differs), mentions as the name shown, code in backticks, block elements and <br> as line breaks, list items
 * bulleted, and the reply fallback (<mx-reply>) dropped. Anything else is reduced to its text.
 */
export function htmlToText(html: string): string {
  let out = "";
  let skip = 0; // inside <mx-reply>, <script>, <style>: dropped with everything in it
  let pre = 0;
  const links: { href: string; start: number }[] = [];
  const lists: { ordered: boolean; n: number }[] = [];
  const newline = () => {
    if (out && !out.endsWith("\n")) out += "\n";
  };
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (skip || SKIPPED.has(name)) return void (SKIPPED.has(name) && skip++);
        if (name === "br") out += "\n";
        else if (name === "a") links.push({ href: attrs.href ?? "", start: out.length });
        else if (name === "code" && !pre) out += "`";
        else if (name === "pre") {
          newline();
          out += "```\n";
          pre++;
        } else if (name === "ol" || name === "ul") {
          newline();
          lists.push({ ordered: name === "ol", n: Number(attrs.start) || 1 });
        } else if (name === "li") {
          newline();
          const list = lists[lists.length - 1];
          out += `${"  ".repeat(Math.max(0, lists.length - 1))}${list?.ordered ? `${list.n++}. ` : "- "}`;
        } else if (name === "blockquote") {
          newline();
          out += "> ";
        } else if (BLOCKS.has(name)) newline();
      },
      ontext(text) {
        if (!skip) out += text;
      },
      onclosetag(name) {
        if (SKIPPED.has(name)) return void (skip = Math.max(0, skip - 1));
        if (skip) return;
        if (name === "a") {
          const link = links.pop();
          if (!link) return;
          const text = out.slice(link.start);
          const mention = /^https:\/\/matrix\.to\/#\/[@#!]/.test(link.href);
          if (!mention && SAFE_SCHEME.test(link.href) && text.trim() !== link.href && !text.includes(link.href))
            out += ` (${link.href})`;
        } else if (name === "code" && !pre) out += "`";
        else if (name === "pre") {
          pre = Math.max(0, pre - 1);
          newline();
          out += "```\n";
        } else if (name === "ol" || name === "ul") {
          lists.pop();
          newline();
        } else if (BLOCKS.has(name) || name === "li" || name === "blockquote") newline();
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  return out.replace(/\n{3,}/g, "\n\n").trim();
}

const SKIPPED = new Set(["mx-reply", "script", "style"]);
const BLOCKS = new Set(["p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "table", "tr", "hr", "details", "summary"]);
const SAFE_SCHEME = /^(https?|mailto|ftp|magnet|matrix):/i;

/**
 * The plain body without its reply fallback: lines quoting the replied-to message (`> <@user:server> …`) and the
 * blank line after them, which clients that predate rich replies needed.
 */
export function stripReplyFallback(body: string): string {
  if (!body.startsWith("> ")) return body;
  const lines = body.split("\n");
  let i = 0;
  while (i < lines.length && lines[i].startsWith(">")) i++;
  if (lines[i] === "") i++;
  return lines.slice(i).join("\n");
}

/**
 * Markdown → `formatted_body`, as Element does: only when the markdown produces formatting (plain text is sent
 * as `body` alone). Raw HTML in the text is escaped, never passed through, and single line breaks are kept.
 */
const markdown = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHTML(token.text);
    },
  },
});

export function markdownToHTML(text: string): string | undefined {
  const html = (markdown.parse(text) as string).trim();
  const plain = `<p>${escapeHTML(text).replace(/\n/g, "<br>")}</p>`;
  if (html.replace(/\n/g, "") === plain) return undefined;
  // A single paragraph needs no <p> around it (what Element sends for inline formatting).
  const single = /^<p>([\s\S]*)<\/p>$/.exec(html);
  return single && !single[1].includes("<p>") ? single[1] : html;
}

export function escapeHTML(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}
