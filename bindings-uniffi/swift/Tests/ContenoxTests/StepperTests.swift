// XCTest cases for a turn stepped by its host from Swift (`client.step`): driven by hand it ends
// as `run` does; replaying the recorded results (stored as JSON) against the openai-style fake
// server sends no request and runs no tool; results that do not fit throw `ContenoxError.Step`
// and change nothing. The same cases as the Kotlin StepperTest.

import Contenox
import Foundation
import XCTest

final class StepperTests: XCTestCase {
    private var root = ""

    override func setUp() {
        super.setUp()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("contenox-swift-step-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
        super.tearDown()
    }

    /// read c0 and write c1 in one reply, then the answer.
    private let script: JSON = .array([
        .object(["tool_calls": .array([
            .object(["id": .string("c0"), "name": .string("read"), "arguments": .object(["n": .int(0)])]),
            .object(["id": .string("c1"), "name": .string("write"), "arguments": .object(["n": .int(1)])]),
        ])]),
        .object(["text": .string("all done")]),
    ])

    /// What the host code was asked to do: reads, writes, asks.
    final class Counts: @unchecked Sendable {
        private let lock = NSLock()
        private var n = [0, 0, 0]
        func add(_ i: Int) { lock.sync { n[i] += 1 } }
        var all: [Int] { lock.sync { n } }
    }

    private func spec(_ name: String) -> ToolSpec {
        ToolSpec(name: name, description: "test tool \(name)", inputSchemaJson: "{\"type\":\"object\"}",
                 hints: Hints(), tier: .core)
    }

    /// `write` asks (a policy), `read` does not; `model` replaces the scripted model.
    private func client(_ counts: Counts, model: [String: JSON]? = nil) throws -> Client {
        func tool(_ name: String, _ verb: String, _ i: Int) -> HostTool {
            hostTool(spec(name)) { args, ctx in
                counts.add(i)
                let n = try JSON.parse(args)["n"]?.int ?? -1
                return ToolOutput(content: "\(verb) \(n) as \(ctx.idempotencyKey)", isError: false, metadataJson: nil)
            }
        }
        let policy: JSON = .object([
            "default_action": .string("allow"),
            "rules": .array([.object(["tool": .string("write"), "action": .string("approve"), "timeout_s": .int(600)])]),
        ])
        var cfg: [String: JSON] = [
            "style": .string("scripted"), "script": script, "builtins": .array([]),
            "root": .string(root), "policy": policy,
        ]
        if let model {
            cfg["script"] = nil
            for (k, v) in model { cfg[k] = v }
        }
        return try Client(configJson: JSON.object(cfg).text, tools: [tool("read", "read", 0), tool("write", "wrote", 1)],
                          waitFor: AsyncWaitFor { _ in counts.add(2); return .approve })
    }

    /// Answer each ask by feeding approve, perform the rest; the actions in order.
    private func drive(_ stepper: Stepper) async throws -> [Action] {
        var actions: [Action] = []
        for _ in 0..<50 {
            let action = try await stepper.next()
            actions.append(action)
            switch action {
            case .done: return actions
            case .ask(let request): try stepper.feed(result: .answer(callId: request.callId, answer: .approve))
            default: _ = try await stepper.perform()
            }
        }
        XCTFail("the stepped turn did not end in 50 actions")
        return actions
    }

    /// An action as comparable text (a done action's result holds an object).
    private func describe(_ action: Action) -> String {
        switch action {
        case .modelRequest(let turnId, let step, let body): return "model_request \(turnId) \(step) \(body)"
        case .summaryRequest(let turnId, let step, let body): return "summary_request \(turnId) \(step) \(body)"
        case .toolCall(let call, let key): return "tool_call \(call.id) \(call.name) \(call.argumentsJson) \(key)"
        case .ask(let r): return "ask \(r.callId) \(r.name) \(r.argumentsJson) \(r.timeoutMs.map(String.init) ?? "-")"
        case .done(let result): return "done \(result.finalText)"
        }
    }

    private func kind(_ action: Action) -> String { String(describe(action).split(separator: " ")[0]) }

    private func withoutTurnIds(_ s: String) -> String {
        s.replacingOccurrences(of: "turn_[0-9a-f]{32}", with: "turn_X", options: .regularExpression)
    }

    private func refused(_ contains: String, _ body: () throws -> Void, line: UInt = #line) {
        XCTAssertThrowsError(try body(), line: line) { error in
            guard case ContenoxError.Step(let detail) = error else {
                return XCTFail("not a Step error: \(error)", line: line)
            }
            XCTAssertTrue(detail.contains(contains), "'\(detail)' lacks '\(contains)'", line: line)
        }
    }

    func testATurnSteppedByHandEndsAsRunDoes() async throws {
        let ran = Counts()
        let c0 = try client(ran)
        let expected = try await c0.run(prompt: "go")
        c0.shutdown()
        XCTAssertEqual(ran.all, [1, 1, 1])

        let counts = Counts()
        let c = try client(counts)
        let stepper = try await c.step(prompt: "go")
        let actions = try await drive(stepper)
        XCTAssertEqual(actions.map(kind), ["model_request", "tool_call", "ask", "tool_call", "model_request", "done"])
        XCTAssertEqual(counts.all, [1, 1, 0], "the ask was fed, not asked of waitFor; each tool ran once")
        guard case .done(let result) = actions.last! else { return XCTFail("no done") }
        XCTAssertEqual(result.outcome, expected.outcome)
        XCTAssertEqual(result.finalText, expected.finalText)
        XCTAssertEqual(result.usage, expected.usage)
        XCTAssertEqual(withoutTurnIds(result.transcript.toJson()), withoutTurnIds(expected.transcript.toJson()))
        let turnId = stepper.turnId()
        XCTAssertTrue(turnId.hasPrefix("turn_") && turnId.count == 37, turnId)
        guard case .toolCall(let call, let key) = actions[3] else { return XCTFail("no write call") }
        XCTAssertEqual(call.name, "write")
        XCTAssertEqual(call.id, "c1")
        XCTAssertEqual(try JSON.parse(call.argumentsJson), .object(["n": .int(1)]))
        XCTAssertEqual(key, "\(turnId):c1")
        XCTAssertTrue(result.transcript.toJson().contains("wrote 1 as \(turnId):c1"))
        XCTAssertEqual(stepper.options().turnId, turnId)
        let kinds = stepper.events().map { $0.kind() }
        XCTAssertEqual(kinds.first, "turn_start")
        XCTAssertEqual(kinds.last, "turn_end")
        XCTAssertTrue(kinds.contains("gate"), "\(kinds)")
        c.shutdown()
    }

    func testReplayingTheJournalGivesTheSameActionsAndDoesNoIO() async throws {
        let scenario: JSON = .object([
            "name": .string("step"), "style": .string("openai"), "model": script,
            "prompt": .string("go"), "expect": .object([:]),
        ])
        let file = root + "/scenario.json"
        try scenario.text.write(toFile: file, atomically: true, encoding: .utf8)
        let server = try await FakeServer.start(file: file)
        do {
            let model: [String: JSON] = [
                "style": .string("openai"), "base_url": .string(server.baseUrl("openai")),
                "model": .string("fake"), "api_key": .string("sk-STEP-SECRET-KEY-0001"),
                "headers": .object(["X-Secret": .string("STEP-HEADER-0002")]),
            ]
            let first = Counts()
            let c1 = try client(first, model: model)
            let stepper = try await c1.step(prompt: "go")
            let actions = try await drive(stepper)
            let journal = stepper.journal()
            let options = stepper.options()
            c1.shutdown()
            XCTAssertEqual(first.all, [1, 1, 0])
            let sent = try await server.requests()
            XCTAssertEqual(try JSON.parse(sent).array?.count, 2)
            let stored = try journal.map { try $0.toJson() }
            XCTAssertEqual(try stored.map { try JSON.parse($0)["kind"]?.string ?? "" },
                           ["model_response", "tool_result", "answer", "tool_result", "model_response"])
            // The request bodies are the wire's, without the key or headers.
            guard case .modelRequest(_, _, let bodyText) = actions[0] else { return XCTFail("no request") }
            let body = try JSON.parse(bodyText)
            XCTAssertEqual(body["model"], .string("fake"))
            XCTAssertEqual(body["messages"]?.array?.last?["content"], .string("go"))
            for a in actions.dropLast() {
                XCTAssertFalse(describe(a).contains("sk-STEP-SECRET-KEY-0001"))
                XCTAssertFalse(describe(a).contains("STEP-HEADER-0002"))
            }

            // Another process would do this: the stored results read back and fed to a turn
            // with the same start.
            let again = Counts()
            let c2 = try client(again, model: model)
            let replay = try await c2.step(prompt: "go", options: options)
            var replayed: [Action] = []
            for json in stored {
                replayed.append(try await replay.next())
                try replay.feed(result: try actionResultFromJson(json: json))
            }
            let done = try await replay.next()
            XCTAssertEqual(replayed.map(describe), actions.dropLast().map(describe))
            guard case .done(let result) = done else { return XCTFail("not done: \(describe(done))") }
            XCTAssertEqual(result.outcome, .done)
            XCTAssertEqual(result.finalText, "all done")
            XCTAssertEqual(replay.journal(), journal)
            c2.shutdown()
            XCTAssertEqual(again.all, [0, 0, 0], "the replay ran no tool and asked nobody")
            let sentAfter = try await server.requests()
            XCTAssertEqual(try JSON.parse(sentAfter).array?.count, 2, "the replay sent no request")
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    func testResultsThatDoNotFitThrowStepAndChangeNothing() async throws {
        let counts = Counts()
        let c = try client(counts)
        let stepper = try await c.step(prompt: "go")
        let x = ToolOutput(content: "x", isError: false, metadataJson: nil)
        refused("call next() first") { try stepper.feed(result: .toolResult(callId: "c0", output: x)) }
        let first = try await stepper.next()
        XCTAssertEqual(kind(first), "model_request")
        let again = try await stepper.next()
        XCTAssertEqual(describe(again), describe(first), "asking twice gives the same action")
        refused("a ask result does not answer it") { try stepper.feed(result: .answer(callId: "c0", answer: .approve)) }
        refused("step 0") { try stepper.feed(result: .modelResponse(step: 3, replyJson: "{\"text\":\"x\"}", error: nil)) }
        refused("a summary_request result does not answer it") {
            try stepper.feed(result: .modelResponse(step: 0, replyJson: "{\"text\":\"x\"}", error: nil, summary: true))
        }
        refused("either a reply or an error") { try stepper.feed(result: .modelResponse(step: 0, replyJson: nil, error: nil)) }
        refused("not an action result") { try stepper.feed(result: .modelResponse(step: 0, replyJson: "not json", error: nil)) }
        refused("not an action result") { _ = try actionResultFromJson(json: "{\"kind\":\"nonsense\"}") }
        refused("not an action result") { _ = try actionResultFromJson(json: "{") }

        guard case .modelResponse(let step, let reply, _, _) = try await stepper.perform() else { return XCTFail("no reply") }
        XCTAssertEqual(step, 0)
        XCTAssertEqual(try JSON.parse(reply ?? "null")["calls"]?.array?.count, 2)
        guard case .toolCall(let read, _) = try await stepper.next() else { return XCTFail("no read") }
        XCTAssertEqual(read.name, "read")
        try stepper.feed(result: .toolResult(callId: "c0", output: ToolOutput(content: "fed", isError: false, metadataJson: nil)))
        refused("call next() first") { try stepper.feed(result: .toolResult(callId: "c0", output: x)) }
        guard case .ask(let request) = try await stepper.next() else { return XCTFail("no ask") }
        XCTAssertEqual(request.callId, "c1")
        refused("another ask than the one waiting (call c1)") {
            try stepper.feed(result: .answer(callId: "c9", answer: .approve))
        }
        try stepper.feed(result: .answer(callId: "c1", answer: .deny(message: "no")))
        var action = try await stepper.next()
        for _ in 0..<10 {
            if case .done = action { break }
            _ = try await stepper.perform()
            action = try await stepper.next()
        }
        guard case .done(let result) = action else { return XCTFail("not done: \(describe(action))") }
        XCTAssertEqual(result.outcome, .done)
        XCTAssertEqual(result.finalText, "all done")
        // Nothing was lost: the fed result and the denial are the calls' results.
        let tools = result.transcript.messages().compactMap { m -> (String, String, Bool)? in
            guard case .tool(let id, _, let content, let isError) = m else { return nil }
            let text = content.compactMap { p -> String? in if case .text(let t) = p { return t }; return nil }.joined()
            return (id, text, isError)
        }
        XCTAssertEqual(tools.map(\.0), ["c0", "c1"])
        XCTAssertEqual(tools[0].1, "fed")
        XCTAssertTrue(tools[1].2 && tools[1].1.contains("no"), "\(tools[1])")
        refused("the turn is done") { try stepper.feed(result: .toolResult(callId: "c1", output: x)) }
        do {
            _ = try await stepper.perform()
            XCTFail("perform after done did not throw")
        } catch ContenoxError.Step(let detail) {
            XCTAssertTrue(detail.contains("the turn is done"), detail)
        }
        let last = try await stepper.next()
        XCTAssertEqual(kind(last), "done")
        c.shutdown()
        XCTAssertEqual(counts.all, [0, 0, 0])
    }
}
