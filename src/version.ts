/** The server's version, answered in every response's `X-Beeper-Desktop-Version` and in `GET /v1/info`. */
export const VERSION = "0.1.0";
export const VERSION_HEADER = "X-Beeper-Desktop-Version";

/** The /v1/ws subprotocol a browser offers next to `bearer.<token>`; the server selects it. */
export const WS_PROTOCOL = "inboxd.v1";
