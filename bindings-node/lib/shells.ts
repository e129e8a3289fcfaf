// Background shells: host-owned (`new BackgroundShells()`, given to clients) or a client's own.

import * as native from '../native'

/**
 * Background shells: the processes `bash` started with `run_in_background`.
 *
 * Make one and give it to clients (`createClient({ background: shells })`; clients given the
 * same one share its shells), and call `closeAll()` on shutdown; or let a client make its own
 * (`background: true`) and get it with `client.backgroundShells()`. Every shell (its whole
 * process group) is killed by `closeAll()`, when its turn is cancelled, and by `close()` of the
 * client whose turn started it.
 */
export class BackgroundShells {
  readonly #native: native.NativeBackgroundShells

  /** No shells yet (`handle` is the engine's, for a client's own shells: leave it out). */
  constructor(handle?: native.NativeBackgroundShells) {
    this.#native = handle ?? new native.NativeBackgroundShells()
  }

  /** The native handle, which `createClient` passes to the engine. */
  get handle(): native.NativeBackgroundShells {
    return this.#native
  }

  /** The ids of every shell started so far, finished ones included, oldest first (`shell_1`, ...). */
  ids(): string[] {
    return this.handle.ids()
  }

  /** A shell's status: `running`, `exited N` or `killed`; `undefined` for an unknown id. */
  status(id: string): string | undefined {
    return this.handle.status(id) ?? undefined
  }

  /** Kill every running shell's process group. The clients stay open. */
  closeAll(): void {
    this.handle.closeAll()
  }
}
