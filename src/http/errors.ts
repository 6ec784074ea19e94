import { ApiError, clip, type Issue } from "../errors.ts";

/** Error messages quote client values; valibot's also say "received <value>". Longer ones are cut here, once. */
const MAX_MESSAGE_CHARS = 300;

function clipDetails(details: NonNullable<ApiError["details"]>): ApiError["details"] {
  const issues = (details as { issues?: Issue[] }).issues;
  if (!Array.isArray(issues)) return details;
  return {
    ...details,
    issues: issues.slice(0, 20).map((issue) => ({
      ...issue,
      message: clip(issue.message, MAX_MESSAGE_CHARS),
      path: issue.path.map((part) => (typeof part === "string" ? clip(part) : part)),
    })),
  };
}

export function toErrorResponse(error: unknown, headers: Record<string, string> = {}): Response {
  const apiError = error instanceof ApiError ? error : new ApiError(500, "INTERNAL_ERROR", "internal server error");
  const body: Record<string, unknown> = { code: apiError.code, message: clip(apiError.message, MAX_MESSAGE_CHARS) };
  if (apiError.details) body.details = clipDetails(apiError.details);
  return new Response(JSON.stringify(body), {
    status: apiError.status,
    headers: { "content-type": "application/json", ...headers, ...apiError.headers },
  });
}
