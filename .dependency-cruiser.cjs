/**
 * The layering of src/ (docs/architecture.md draws it), checked by `npm run lint` in `npm test`.
 *
 *   adapters/ (node, workers) ──▶ src/app.ts (composes) ──▶ http/ ──▶ routes/ · mcp/ · v0/ · oauth/ · web/
 *                                                              └──▶ services/ ──▶ store/ ──▶ schema/
 *   events/ (log, hub, sinks) beside services: services announce through the context, never import events/.
 *   connectors/<network>/ ──▶ bridges/ contract (connector.ts, login.ts) + neutral helpers (schema/, util/)
 *
 * Tests beside the code (*.test.ts) may reach across layers to set up what they check, so they are not held to it.
 */
const tests = "\\.test\\.ts$";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle: the modules cannot be read, tested or loaded one without the other.",
      from: { path: "^(src|adapters)/", pathNot: tests },
      to: { circular: true },
    },
    {
      name: "core-without-adapters",
      severity: "error",
      comment: "src/ is runtime-free: what one runtime does is handed in through AppOptions by adapters/.",
      from: { path: "^src/", pathNot: tests },
      to: { path: "^adapters/" },
    },
    {
      name: "services-below-http-and-events",
      severity: "error",
      comment: "Domain logic knows no Request/Response and no event sink: it announces through Context.",
      from: { path: "^src/services/", pathNot: tests },
      to: { path: "^src/(http|events|routes|mcp|v0|oauth|web|spec|app\\.ts)" },
    },
    {
      name: "store-at-the-bottom",
      severity: "error",
      comment: "The store keeps records; it uses only the wire schemas and neutral helpers.",
      from: { path: "^src/store/", pathNot: tests },
      to: { path: "^src/", pathNot: ["^src/(store|schema|util)/", "^src/errors\\.ts$"] },
    },
    {
      name: "schema-is-a-leaf",
      severity: "error",
      comment: "Wire and request schemas are shared by routes, MCP and /v0; they import nothing of the app.",
      from: { path: "^src/schema/", pathNot: tests },
      to: { path: "^src/", pathNot: ["^src/(schema|util)/", "^src/errors\\.ts$"] },
    },
    {
      name: "connectors-see-only-the-contract",
      severity: "error",
      comment: "A network is one folder speaking src/bridges/connector.ts and login.ts; the core is not its to use.",
      from: { path: "^src/connectors/([^/]+)/", pathNot: tests },
      to: {
        path: "^src/",
        pathNot: [
          "^src/connectors/$1/",
          "^src/bridges/(connector|login)\\.ts$",
          "^src/schema/",
          "^src/util/",
          "^src/errors\\.ts$",
          "^src/store/records\\.ts$",
        ],
      },
    },
    {
      name: "surfaces-do-not-borrow-from-routes",
      severity: "error",
      comment: "MCP, /v0 and OAuth take shared request schemas from src/schema/, not from another surface's routes.",
      from: { path: "^src/(mcp|v0|oauth|spec|web)/", pathNot: tests },
      to: { path: "^src/routes/" },
    },
    {
      name: "only-the-root-imports-the-root",
      severity: "error",
      comment: "src/app.ts composes; nothing in src/ imports it (constants live in src/version.ts).",
      from: { path: "^src/", pathNot: [tests, "^src/app\\.ts$"] },
      to: { path: "^src/app\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
