// Thin hand-written helpers over the UniFFI-generated bindings (Contenox.swift): the event
// stream as an AsyncStream, a run whose turn is cancelled with the calling Task, a host tool from
// a closure, `loadMcp` / `loadRemote` with closure listeners, `register` for MCP tools, and the
// preset policies. No behaviour lives here: each helper only calls the generated API.

/// The approval policies that ship with the engine (hitl-policy-v1 documents, as JSON text): for
/// config `policy` and `client.setPolicy(policy:)`. Each is the engine's own document
/// (`policyPreset(name:)`).
public enum Policies {
    /// Secrets denied, reads allowed, writes and unknown shell commands asked, the rest asked.
    public static func `default`() -> String { preset("default") }
    /// As `default()`, but every shell line asks and anything not named is denied.
    public static func strict() -> String { preset("strict") }
    /// Secrets still denied and destructive shell lines asked; the rest runs.
    public static func dev() -> String { preset("dev") }

    // The engine has every one of these names, so this never throws.
    private static func preset(_ name: String) -> String { try! policyPreset(name: name) }
}

extension Run {
    /// The run's events as an `AsyncStream`: batches of `nextBatch()` until the turn ends (the
    /// last event is `.turnEnd`). The stream reads this run's handle, so iterate it once. Ending the
    /// iteration early leaves the turn running: call `cancel()` for that.
    public var events: AsyncStream<Event> {
        AsyncStream { continuation in
            let reader = Task {
                while true {
                    let batch = await self.nextBatch()
                    if batch.isEmpty { break }
                    for event in batch { continuation.yield(event) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
    }
}

extension Client {
    /// `run(prompt:allow:settingsJson:)` tied to the calling Task: cancelling the Task cancels
    /// the turn (it ends as `.cancelled`, with a valid transcript) and this returns its result.
    public func runCancellable(
        prompt: String, allow: [String]? = nil, settingsJson: String? = nil
    ) async throws -> TurnResult {
        let run = try await stream(prompt: prompt, allow: allow, settingsJson: settingsJson)
        return try await withTaskCancellationHandler {
            try await run.result()
        } onCancel: {
            run.cancel()
        }
    }

    /// Add a tool of another source (an `McpSource`'s tool or resource tool) as it is: the
    /// same as `registerSourceTool(tool:)`, so that `register(tool:)` takes both kinds.
    public func register(tool: SourceTool) throws {
        try registerSourceTool(tool: tool)
    }
}

/// A `HostTool` made of its spec and an async closure, which gets the arguments as JSON text and
/// the call's context (Kotlin's `hostTool(spec) { argumentsJson, context -> ... }`). What the
/// closure throws becomes an error result the model sees: `ContenoxError.Host(detail:)` gives it
/// exactly `detail`, any other error its description.
public func hostTool(
    _ spec: ToolSpec,
    _ call: @escaping @Sendable (_ argumentsJson: String, _ context: ToolContext) async throws -> ToolOutput
) -> HostTool {
    final class ClosureTool: HostTool, @unchecked Sendable {
        let toolSpec: ToolSpec
        let body: @Sendable (String, ToolContext) async throws -> ToolOutput
        init(_ spec: ToolSpec, _ body: @escaping @Sendable (String, ToolContext) async throws -> ToolOutput) {
            toolSpec = spec
            self.body = body
        }
        func spec() throws -> ToolSpec { toolSpec }
        func call(argumentsJson: String, context: ToolContext) async throws -> ToolOutput {
            try await body(argumentsJson, context)
        }
    }
    return ClosureTool(spec, call)
}

/// `loadMcp(configJson:onServer:)` with the listener as a closure, called once per server as it
/// settles, before this returns.
public func loadMcp(
    configJson: String,
    onServer: @escaping @Sendable (String, ServerState) -> Void
) async throws -> McpSource {
    final class Listener: McpServerListener, @unchecked Sendable {
        let report: @Sendable (String, ServerState) -> Void
        init(_ report: @escaping @Sendable (String, ServerState) -> Void) { self.report = report }
        func onServer(name: String, state: ServerState) throws { report(name, state) }
    }
    return try await loadMcp(configJson: configJson, onServer: Listener(onServer))
}

/// `loadRemote(hooksJson:onHook:)` with the listener as a closure, called once per hook as it
/// settles (`.ready(tools:)` or `.unavailable(error:)`), before this returns. `hooksJson` is the
/// engine's JSON array of hooks; no Swift value holds the header values, so none can print them.
public func loadRemote(
    hooksJson: String,
    onHook: @escaping @Sendable (String, HookState) -> Void
) async throws -> RemoteSource {
    final class Listener: RemoteHookListener, @unchecked Sendable {
        let report: @Sendable (String, HookState) -> Void
        init(_ report: @escaping @Sendable (String, HookState) -> Void) { self.report = report }
        func onHook(name: String, state: HookState) throws { report(name, state) }
    }
    return try await loadRemote(hooksJson: hooksJson, onHook: Listener(onHook))
}

/// Every lifecycle point's "no hook" answer (`.continue`, `.stop`, `.proceed`, nothing for the
/// observers): a `LifecycleHooks` implementation writes only the points it needs. (A UniFFI
/// callback interface has no default methods; a protocol extension gives them.)
extension LifecycleHooks {
    public func onPrompt(prompt: String) async throws -> PromptAction { .`continue` }
    public func onStop(finalText: String) async throws -> StopAction { .stop }
    public func beforeCompact(request: CompactRequest) async throws -> CompactAction { .proceed }
    public func onToolError(call: ToolCallEvent, result: ToolOutput) async throws {}
    public func onTurnStart(prompt: String) async throws {}
    public func onTurnEnd(end: TurnEndInfo) async throws {}
    public func onNotification(notification: Notification) async throws {}
}
