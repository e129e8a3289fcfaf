// What every tool source (MCP servers, remote services) gives a client: its tools.

import * as native from '../native'

/** A tool of another source (an MCP server's tool, a resource tool): `client.register()` takes it. */
export class SourceTool {
  readonly #native: native.NativeTool

  /** Use `source.tools()`, `source.resourceTools()` or `client.asToolWith()`. */
  constructor(handle: native.NativeTool) {
    this.#native = handle
  }

  /** The tool's name as the model sees it (`<server>__<tool>`). */
  get name(): string {
    return this.#native.name
  }

  /** @internal */
  get handle(): native.NativeTool {
    return this.#native
  }
}
