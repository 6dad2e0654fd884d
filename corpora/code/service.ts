import { readFile } from "node:fs/promises";

/** Options accepted by {@link UserService}. */
export interface ServiceOptions {
  baseUrl: string;
  timeoutMs?: number;
  retries: number;
}

export type Role = "admin" | "editor" | "viewer";

export enum Status {
  Active = "active",
  Suspended = "suspended",
}

function sealed(constructor: Function): void {
  Object.seal(constructor);
  Object.seal(constructor.prototype);
}

@sealed
export class UserService<T extends { id: string }> {
  private readonly cache = new Map<string, T>();

  constructor(private readonly options: ServiceOptions) {}

  // Look in the cache first, then load from disk.
  async get(id: string): Promise<T | undefined> {
    const hit = this.cache.get(id);
    if (hit !== undefined) {
      return hit;
    }
    const raw = await readFile(`${this.options.baseUrl}/${id}.json`, "utf8");
    const value = JSON.parse(raw) as T;
    this.cache.set(id, value);
    return value;
  }

  roles(user: T & { roles?: Role[] }): Role[] {
    return user.roles ?? ["viewer"];
  }
}

export namespace Util {
  export function clamp(n: number, lo: number, hi: number): number {
    return Math.min(hi, Math.max(lo, n));
  }
}

export const retry = async <R>(fn: () => Promise<R>, times: number): Promise<R> => {
  let last: unknown;
  for (let i = 0; i < times; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
    }
  }
  throw last;
};
