// XCTest cases for the hand-written Swift (Sources/Contenox/ContenoxAsync.swift) and the async
// callbacks, on the engine's scripted model (no network): cancelling a Swift Task reaches the
// engine (the turn ends `cancelled`, its shell process is gone, a pending `waitFor` Task is
// cancelled), an async `waitFor`, throwing host tools, `Run.events` as an AsyncStream, the
// `loadMcp` / `loadRemote` closure listeners, host-made background shells shared by clients, the
// idempotency key a resumed call gets. Events are read as the engine's JSON (`toJson()`).

import Contenox
import Foundation
import XCTest

final class AsyncTests: XCTestCase {
    private var root = ""

    override func setUp() {
        super.setUp()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("contenox-swift-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
        super.tearDown()
    }

    /// The engine's scripted model answering with `script`, in a fresh root.
    private func config(_ script: [JSON], builtins: [String] = []) -> String {
        JSON.object([
            "style": .string("scripted"),
            "root": .string(root),
            "builtins": .array(builtins.map { .string($0) }),
            "script": .array(script),
        ]).text
    }

    private func calls(_ list: [(id: String, name: String, args: JSON)]) -> JSON {
        .object(["tool_calls": .array(list.map {
            .object(["id": .string($0.id), "name": .string($0.name), "arguments": $0.args])
        })])
    }

    private func text(_ t: String) -> JSON { .object(["text": .string(t)]) }

    private func spec(_ name: String) -> ToolSpec {
        ToolSpec(name: name, description: "The \(name) tool.", inputSchemaJson: "{\"type\":\"object\"}",
                 hints: Hints(), tier: .core)
    }

    private func echo() -> HostTool {
        hostTool(spec("echo")) { args, _ in ToolOutput(content: args, isError: false, metadataJson: nil) }
    }

    /// The engine's JSON of every `tool_result` event.
    private func toolResults(_ events: [Event]) throws -> [JSON] {
        try events.filter { $0.kind() == "tool_result" }.map { try JSON.parse($0.toJson()) }
    }

    func testCancellingTheTaskEndsTheTurnCancelledAndKillsItsShell() async throws {
        // a number no other process has on its command line
        let marker = "300.\(Int.random(in: 100_000_000...999_999_999))"
        let client = try Client(configJson: config(
            [calls([("c1", "bash", .object(["command": .string("sleep \(marker)")]))]), text("after the cancel")],
            builtins: ["bash"]))
        let task = Task { try await client.runCancellable(prompt: "sleep a while") }
        try await waitUntil("the shell started") { !processes(containing: marker).isEmpty }
        task.cancel()
        try await expectCancelled(task, client)
        // the engine killed the shell's process group: nothing with the marker is left
        try await waitUntil("the shell was killed") { processes(containing: marker).isEmpty }
        // the cancelled turn left a valid transcript: the next turn runs on the next entry
        let next = try await client.run(prompt: "again")
        XCTAssertEqual(next.outcome, .done)
        XCTAssertEqual(next.finalText, "after the cancel")
        client.shutdown()
    }

    func testHostMadeShellsAreSharedAndShutdownEndsOnlyWhatItsTurnsStarted() async throws {
        let shells = BackgroundShells()
        XCTAssertEqual(shells.ids(), [])
        let ma = "300.\(Int.random(in: 100_000_000...999_999_999))"
        let mb = "300.\(Int.random(in: 100_000_000...999_999_999))"
        func sharing(_ marker: String) throws -> Client {
            let bash = JSON.object(["command": .string("sleep \(marker)"), "run_in_background": .bool(true)])
            return try Client(configJson: config([calls([("c1", "bash", bash)]), text("started")], builtins: ["bash"]),
                              backgroundShells: shells)
        }
        let a = try sharing(ma)
        let b = try sharing(mb)
        let ra = try await a.run(prompt: "start")
        let rb = try await b.run(prompt: "start")
        XCTAssertEqual(ra.outcome, .done)
        XCTAssertEqual(rb.outcome, .done)
        XCTAssertEqual(shells.ids(), ["shell_1", "shell_2"])
        XCTAssertEqual(a.backgroundShells()?.ids(), shells.ids())
        try await waitUntil("both sleepers run") {
            !processes(containing: ma).isEmpty && !processes(containing: mb).isEmpty
        }
        a.shutdown()
        try await waitUntil("a's sleeper is gone") { processes(containing: ma).isEmpty }
        XCTAssertFalse(processes(containing: mb).isEmpty, "shutting a down killed b's shell")
        XCTAssertEqual(shells.status(id: "shell_2"), "running")
        shells.closeAll()
        try await waitUntil("b's sleeper is gone") { processes(containing: mb).isEmpty }
        b.shutdown()
    }

    func testAnAsyncWaitForAnswersAfterAwaiting() async throws {
        let asked = Box<PendingRequest>()
        let waitFor = AsyncWaitFor { request in
            asked.put(request)
            try await Task.sleep(nanoseconds: 50_000_000) // suspends: the engine waits for it
            return .approve
        }
        let client = try Client(
            configJson: config([calls([("c1", "echo", .object(["x": .int(1)]))]), text("approved and done")]),
            tools: [echo()], hooks: AskEverything(), waitFor: waitFor)
        let run = try await client.stream(prompt: "ask first")
        var events: [Event] = []
        for await e in run.events { events.append(e) }
        let result = try await run.result()
        XCTAssertEqual(result.outcome, .done)
        XCTAssertEqual(result.finalText, "approved and done")
        XCTAssertEqual(asked.value?.name, "echo")
        XCTAssertEqual(asked.value?.callId, "c1")
        XCTAssertEqual(asked.value?.argumentsJson, "{\"x\":1}")
        let results = try toolResults(events)
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(results.first?["is_error"], .bool(false))
        XCTAssertEqual(results.first?["content"], .string("{\"x\":1}"))
        XCTAssertTrue(events.map { $0.kind() }.contains("answer"), "\(events.map { $0.kind() })")
        client.shutdown()
    }

    func testCancellingTheTaskCancelsAPendingWaitFor() async throws {
        let started = Flag()
        let sawCancel = Flag()
        let waitFor = AsyncWaitFor { _ in
            started.set()
            do {
                while true { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
            } catch {
                if error is CancellationError { sawCancel.set() }
                throw error
            }
        }
        let client = try Client(
            configJson: config([calls([("c1", "echo", .object([:]))]), text("second answer")]),
            tools: [echo()], hooks: AskEverything(), waitFor: waitFor)
        let task = Task { try await client.runCancellable(prompt: "ask me") }
        try await waitUntil("waitFor was called") { started.isSet }
        task.cancel()
        try await expectCancelled(task, client)
        // the engine stopped waiting, which cancelled the Swift Task running waitFor
        try await waitUntil("waitFor saw CancellationError") { sawCancel.isSet }
        client.shutdown()
    }

    func testTheIdempotencyKeyIsTheSameInEveryClientThatResumesTheCall() async throws {
        /// A `write` tool that keeps the key its call got.
        func write(_ seen: Box<String>) -> HostTool {
            hostTool(spec("write")) { _, ctx in
                seen.put(ctx.idempotencyKey)
                return ToolOutput(content: "wrote", isError: false, metadataJson: nil)
            }
        }
        let none = Box<String>()
        let a = try Client(
            configJson: config([calls([("c1", "write", .object(["path": .string("a")]))])]),
            tools: [write(none)], hooks: AskEverything(), waitFor: AsyncWaitFor { _ in .suspend })
        let first = try await a.run(prompt: "go")
        a.shutdown()
        XCTAssertEqual(first.outcome, .suspended)
        XCTAssertNil(none.value, "suspended before the tool ran")
        let checkpoint = try XCTUnwrap(first.checkpoint)
        let turnId = try XCTUnwrap(JSON.parse(checkpoint)["turn_id"]?.string)
        XCTAssertTrue(turnId.hasPrefix("turn_") && turnId.count == 37, turnId)
        // Two clients resume the same checkpoint (a worker that crashed while the tool ran, and
        // the one that took over): the tool gets the same key both times.
        for _ in 0..<2 {
            let seen = Box<String>()
            let b = try Client(
                configJson: config([text("done")]),
                tools: [write(seen)], hooks: AskEverything(), waitFor: AsyncWaitFor { _ in .approve })
            let done = try await b.resume(checkpoint: checkpoint, answers: ["c1": .approve])
            b.shutdown()
            XCTAssertEqual(done.outcome, .done)
            XCTAssertEqual(seen.value, "\(turnId):c1")
        }
    }

    func testThrowingHostToolsBecomeErrorResultsTheModelSees() async throws {
        let plain = hostTool(spec("plain")) { _, _ in throw ToolFailure(message: "the disk is on fire") }
        let exact = hostTool(spec("exact")) { _, _ in throw ContenoxError.Host(detail: "quota exceeded") }
        let client = try Client(
            configJson: config([
                calls([("c1", "plain", .object([:])), ("c2", "exact", .object([:]))]),
                text("recovered"),
            ]),
            tools: [plain, exact])
        let run = try await client.stream(prompt: "try both")
        var events: [Event] = []
        for await e in run.events { events.append(e) }
        let result = try await run.result()
        // the turn goes on after the errors: the model answered them
        XCTAssertEqual(result.outcome, .done)
        XCTAssertEqual(result.finalText, "recovered")
        let byName = Dictionary(uniqueKeysWithValues: try toolResults(events).map { ($0["name"]?.string ?? "", $0) })
        XCTAssertEqual(byName["plain"]?["is_error"], .bool(true))
        XCTAssertTrue(byName["plain"]?["content"]?.string?.contains("the disk is on fire") == true,
                      "\(byName["plain"]?.text ?? "no result")")
        XCTAssertEqual(byName["exact"]?["is_error"], .bool(true))
        XCTAssertEqual(byName["exact"]?["content"], .string("quota exceeded")) // exactly the detail
        client.shutdown()
    }

    func testEventsArriveAsAnAsyncStreamInOrderAndEnd() async throws {
        let client = try Client(
            configJson: config([calls([("c1", "echo", .object(["a": .string("b")]))]), text("all done now")]),
            tools: [echo()])
        let run = try await client.stream(prompt: "hello")
        var kinds: [String] = []
        var last: Event? = nil
        for await e in run.events {
            kinds.append(e.kind())
            last = e
        }
        XCTAssertEqual(kinds.first, "turn_start")
        XCTAssertEqual(kinds.last, "turn_end")
        let expected = ["turn_start", "tool_call", "gate", "tool_start", "tool_result", "text", "turn_end"]
        var at = 0
        for k in kinds where at < expected.count && k == expected[at] { at += 1 }
        XCTAssertEqual(at, expected.count, "\(kinds)")
        let end = try JSON.parse(last!.toJson())
        XCTAssertEqual(end["outcome"], .string("done"))
        XCTAssertEqual(end["final_text"], .string("all done now"))
        // The stream ends at turn_end, which the turn sends just before it returns its result:
        // isFinished is the result's being recorded, so it is checked after result().
        let result = try await run.result()
        XCTAssertEqual(result.outcome, .done)
        XCTAssertTrue(run.isFinished())
        client.shutdown()
    }

    func testLeavingTheStreamEarlyLeavesTheTurnToCancel() async throws {
        let client = try Client(configJson: config([.object(["stall": .bool(true)]), text("next")]))
        let run = try await client.stream(prompt: "stall")
        for await e in run.events where e.kind() == "request" { break }
        XCTAssertFalse(run.isFinished()) // still waiting on the stalled model
        run.cancel()
        let outcome = try await run.result().outcome
        XCTAssertEqual(outcome, .cancelled)
        let next = try await client.run(prompt: "next")
        XCTAssertEqual(next.finalText, "next")
        client.shutdown()
    }

    func testLoadMcpAndLoadRemoteReportEveryServerToTheirClosures() async throws {
        // an MCP server that cannot start, and a remote hook where nothing listens
        let mcpReports = Reports()
        let source = try await loadMcp(
            configJson: "{\"mcpServers\": {\"broken\": {\"command\": \"/nonexistent/contenox-test-server\"}}}"
        ) { name, state in
            if case .failed = state { mcpReports.add(name) }
        }
        XCTAssertEqual(mcpReports.all, ["broken"]) // reported before loadMcp returned
        await source.shutdown()

        let port = try freePort()
        let hooks = "[{\"name\": \"tickets\", \"url\": \"http://127.0.0.1:\(port)\", \"protocol\": \"openapi\"}]"
        let remoteReports = Reports()
        let remote = try await loadRemote(hooksJson: hooks) { name, state in
            if case .unavailable = state { remoteReports.add(name) }
        }
        XCTAssertEqual(remoteReports.all, ["tickets"])
        XCTAssertEqual(remote.hooks().map(\.name), ["tickets"])
        await remote.shutdown()
    }
}

/// The turn of `task` ended `cancelled` within 10 s of the Task's cancellation (else the client
/// cancels it, so the test fails instead of hanging).
func expectCancelled(_ task: Task<TurnResult, Error>, _ client: Client,
                     file: StaticString = #filePath, line: UInt = #line) async throws {
    switch try await withDeadline(seconds: 10, work: { try await task.value }, onExpiry: { client.cancel() }) {
    case .done(let result):
        XCTAssertEqual(result.outcome, .cancelled, file: file, line: line)
    case .expired:
        XCTFail("cancelling the Task did not end the turn within 10 s", file: file, line: line)
    }
}

/// Asks before every call.
final class AskEverything: Hooks, @unchecked Sendable {
    func beforeTool(call: ToolCallEvent) async throws -> Decision {
        .ask(kind: "approval", prompt: "Run \(call.name)?", timeoutMs: nil, dataJson: nil)
    }

    func afterTool(call: ToolCallEvent, result: ToolOutput) async throws -> ToolOutput? { nil }
}

/// A `WaitFor` made of an async closure.
final class AsyncWaitFor: WaitFor, @unchecked Sendable {
    private let body: @Sendable (PendingRequest) async throws -> Answer
    init(_ body: @escaping @Sendable (PendingRequest) async throws -> Answer) { self.body = body }
    func waitFor(request: PendingRequest) async throws -> Answer { try await body(request) }
}

/// A value set from another thread.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    func put(_ v: T) { lock.sync { stored = v } }
    var value: T? { lock.sync { stored } }
}

/// Poll `condition` every 20 ms for at most 10 s.
func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(10)
    while !condition() {
        guard Date() < deadline else { throw RunnerError("timed out waiting: \(what)") }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
}

/// The live processes (not zombies) whose command line contains `marker`, read from /proc.
func processes(containing marker: String) -> [Int32] {
    let me = ProcessInfo.processInfo.processIdentifier
    // Listing /proc can fail when a process exits in the middle of it; a failed listing is not
    // "no such process" (read as that, it let a check pass or fail at random), so list again.
    var listed: [String]?
    for _ in 0..<50 where listed == nil {
        listed = try? FileManager.default.contentsOfDirectory(atPath: "/proc")
    }
    guard let entries = listed else { fatalError("cannot list /proc") }
    return entries.compactMap { entry in
        guard let pid = Int32(entry), pid != me,
              let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
              String(decoding: cmdline, as: UTF8.self).contains(marker),
              let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state == "Z" ? nil : pid
    }
}
