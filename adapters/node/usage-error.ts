/** A mistake in how inboxd was called: exit 2 with the message, and (unless `pointToHelp` is false) where help is. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly pointToHelp = true,
  ) {
    super(message);
  }
}
