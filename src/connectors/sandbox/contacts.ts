import type { User } from "../../schema/wire.ts";
import { person, prng } from "./corpus.ts";

/** Who a sandbox account knows: Echo, and an address book derived from the account's seed (the same every time). */
export const SANDBOX_DOMAIN = "sandbox.invalid";
export const ECHO_ID = `@echo:${SANDBOX_DOMAIN}`;
export const echoUser: User = { id: ECHO_ID, fullName: "Echo", username: "echo" };

export interface SandboxState {
  seed: number;
  contacts: number;
}

export function sandboxContacts(state: SandboxState): User[] {
  const random = prng(state.seed);
  const users: User[] = [echoUser];
  for (let i = 0; i < state.contacts; i++) {
    const p = person(random, i);
    users.push({
      id: `@${p.username}:${SANDBOX_DOMAIN}`,
      fullName: p.fullName,
      username: p.username,
      phoneNumber: `+1555${String(state.seed % 1000).padStart(3, "0")}${String(i).padStart(4, "0")}`,
      email: `${p.username}@${SANDBOX_DOMAIN}`,
    });
  }
  return users;
}

export const directChatID = (userID: string) => `dm:${userID}`;
