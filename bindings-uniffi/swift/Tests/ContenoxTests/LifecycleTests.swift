// XCTest cases for the lifecycle hooks (`LifecycleHooks`, beside `Hooks`) on the engine's
// scripted model: each point's argument and answer, the protocol extension's "no hook" answers,
// and a hook that throws falling back (the turn goes on).

import Contenox
import Foundation
import XCTest

final class LifecycleTests: XCTestCase {
    private var root = ""

    override func setUp() {
        super.setUp()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("contenox-lc-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
        super.tearDown()
    }

    private func config(_ script: [JSON], maxTurns: Int = 5) -> String {
        JSON.object([
            "style": .string("scripted"),
            "root": .string(root),
            "builtins": .array([]),
            "script": .array(script),
            "max_turns": .int(Int64(maxTurns)),
            "hook_timeout_ms": .int(300),
            "compaction": .object(["threshold_tokens": .int(1_000_000), "keep_recent": .int(1)]),
        ]).text
    }

    private func text(_ t: String) -> JSON { .object(["text": .string(t)]) }

    private func firstContent(_ r: TurnResult) throws -> String {
        let doc = try JSON.parse(r.transcript.toJson())
        return doc["messages"]?.array?.first?["content"]?.text ?? ""
    }

    final class Recorder: LifecycleHooks, @unchecked Sendable {
        let lock = NSLock()
        var log: [String] = []
        var stops = 0
        func add(_ s: String) { lock.lock(); log.append(s); lock.unlock() }
        func onTurnStart(prompt: String) async throws { add("turn_start \(prompt)") }
        func onPrompt(prompt: String) async throws -> PromptAction {
            add("prompt \(prompt)")
            return .addContext("(from the hook)")
        }
        func onStop(finalText: String) async throws -> StopAction {
            add("stop \(finalText)")
            stops += 1
            return stops == 1 ? .`continue`("check again") : .stop
        }
        func onTurnEnd(end: TurnEndInfo) async throws { add("turn_end \(end.finalText)") }
    }

    func testPointsAreCalledInOrderAndAnswersApply() async throws {
        let rec = Recorder()
        let client = try Client(configJson: config([text("first answer"), text("second answer")]), lifecycle: rec)
        let r = try await client.run(prompt: "hello")
        XCTAssertEqual(r.outcome, .done)
        XCTAssertEqual(r.finalText, "second answer")
        XCTAssertEqual(rec.log, ["turn_start hello", "prompt hello", "stop first answer", "stop second answer",
                                 "turn_end second answer"])
        let first = try firstContent(r)
        XCTAssertTrue(first.contains("hello") && first.contains("(from the hook)"), first)
    }

    final class Refuser: LifecycleHooks, @unchecked Sendable {
        func onPrompt(prompt: String) async throws -> PromptAction { .refuse("not that") }
    }

    func testARefusedPromptEndsTheTurnWithoutARequest() async throws {
        let client = try Client(configJson: config([text("never")]), lifecycle: Refuser())
        let r = try await client.run(prompt: "bad")
        XCTAssertEqual(r.outcome, .error)
        XCTAssertEqual(r.error, "the prompt was refused by a hook: not that")
        XCTAssertEqual(r.transcript.len(), 0)
    }

    final class Vetoer: LifecycleHooks, @unchecked Sendable {
        func beforeCompact(request: CompactRequest) async throws -> CompactAction { .veto("not now") }
    }

    func testBeforeCompactVetoes() async throws {
        let client = try Client(configJson: config([text("a"), text("b")]), lifecycle: Vetoer())
        _ = try await client.run(prompt: "one")
        _ = try await client.run(prompt: "two")
        let notice = try await client.compact()
        XCTAssertNil(notice)
        XCTAssertEqual(client.transcript().len(), 4)
    }

    struct HookBug: Error {}

    final class Broken: LifecycleHooks, @unchecked Sendable {
        func onPrompt(prompt: String) async throws -> PromptAction { throw HookBug() }
        func onStop(finalText: String) async throws -> StopAction { throw HookBug() }
        func beforeCompact(request: CompactRequest) async throws -> CompactAction { throw HookBug() }
        func onTurnStart(prompt: String) async throws { throw HookBug() }
        func onTurnEnd(end: TurnEndInfo) async throws { throw HookBug() }
    }

    func testAThrowingHookFallsBackAndTheTurnGoesOn() async throws {
        let client = try Client(configJson: config([text("done"), text("second"), text("the summary")]),
                                lifecycle: Broken())
        let r = try await client.run(prompt: "as it is")
        XCTAssertEqual(r.outcome, .done)
        XCTAssertEqual(r.finalText, "done")
        XCTAssertTrue(try firstContent(r).contains("as it is"))
        _ = try await client.run(prompt: "more")
        let notice = try await client.compact()
        XCTAssertEqual(notice?.summary, "the summary")
    }
}
