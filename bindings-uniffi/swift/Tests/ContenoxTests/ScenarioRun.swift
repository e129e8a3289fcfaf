// One conformance scenario run through the public Swift API: the fake model server, the client
// (host tools as `HostTool`, the rules as `Hooks`, the answers as `WaitFor`, actions on the `Run`
// handle, events read from `Run.events`), then the trace. The same steps, in the same order, as
// the Kotlin runner (kotlin/src/test/kotlin/contenox/ConformanceTest.kt); scenario keys are
// documented in tests/conformance/README.md. The config goes to the engine as JSON and events
// go into the trace as the engine's own JSON (`toJson()`), so a new option or event needs no
// change here.

import Contenox
import Foundation

final class ScenarioRun: @unchecked Sendable {
    let file: String
    let scenario: JSON
    let root: String
    private let lock = NSLock()
    private var answers: [JSON]
    private var client: Client?
    private var subagents: [Client] = []
    private var compactions: [String] = []
    /// Extension `lifecycle`: the scenario's lifecycle hooks, which log each call.
    private lazy var lifecycle: ScenarioLifecycle? = scenario["lifecycle"]?.object.map(ScenarioLifecycle.init)
    private var aborted = false
    /// What the run's `rendezvous` tools share (README): the calls running now, and the meetings
    /// so far (a call that finds `count` running releases every call running then).
    private var meetingRunning = 0
    private var meetingEpoch = 0
    /// The scenario's `subagents`, built before the scenario's client and shut down after it.
    private let subagentSpecs: [JSON]
    private var server: FakeServer?
    private let mcp = McpSetup()
    private let remote: RemoteSetup

    init(file: String, scenario: JSON, workdir: String) throws {
        self.file = file
        self.scenario = scenario
        root = workdir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        answers = scenario["wait_for"]?.array ?? []
        subagentSpecs = scenario["subagents"]?.array ?? []
        remote = RemoteSetup(file: file)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.sync(body) }

    private var name: String { scenario["name"]?.string ?? "" }

    /// The runner's deadline passed: shut every client down (its turns end `cancelled`) and stop
    /// the servers, so `run()` returns.
    func abort() async {
        let (clients, server): ([Client], FakeServer?) = locked {
            aborted = true
            return ((client.map { [$0] } ?? []) + subagents, self.server)
        }
        for c in clients { c.shutdown() }
        await server?.stop()
        await mcp.close()
        await remote.close()
    }

    func run() async throws -> String {
        try writeWorkspace()
        let server = try await FakeServer.start(file: file)
        locked { self.server = server }
        do {
            let trace = try await runWith(server)
            await cleanUp(server)
            return trace
        } catch {
            await cleanUp(server)
            throw error
        }
    }

    private func cleanUp(_ server: FakeServer) async {
        release()
        let subs: [Client] = locked { let s = subagents; subagents = []; return s }
        for c in subs { c.shutdown() }
        await mcp.close()
        await remote.close()
        await server.stop()
    }

    private func runWith(_ server: FakeServer) async throws -> String {
        let style = scenario["style"]?.string ?? ""
        if let spec = scenario["mcp"], spec != .null { try await mcp.start(spec) }
        if let services = scenario["remote"]?.array, !services.isEmpty { try await remote.start(services) }
        let baseUrl = server.baseUrl(style)
        let config = clientConfig(baseUrl)
        try buildSubagents(baseUrl)
        var events: [String] = []
        let actions = scenario["actions"]?.array ?? []
        var fired = [Bool](repeating: false, count: actions.count)
        let prompts = [scenario["prompt"]?.string ?? ""] + (scenario["more_prompts"]?.array ?? []).compactMap(\.string)
        let restart = scenario["restart_between_prompts"]?.bool ?? false
        // SPEC "Approval policies": the creation error is the result; no turn runs. The same for
        // a refusal of the first run's `run_settings` (extension).
        func refused(_ error: ContenoxError) async throws -> String {
            guard case .Config(let detail, _, _, _) = error, scenario["expect"]?["config_error_contains"] != nil else {
                throw error
            }
            return "{\"scenario\":\(jsonQuote(name)),\"binding\":\"swift\",\"config_error\":\(jsonQuote(detail))"
                + ",\"requests\":\(try await server.requests()),\"workspace\":\(snapshot())}"
        }
        var current: Client
        do {
            current = try build(config)
        } catch let error as ContenoxError {
            return try await refused(error)
        }
        // before the first prompt, into the first client (`mcp` is not combined with
        // `restart_between_prompts`: shutting a client down stops the servers given to it)
        try mcp.registerInto(current)
        try remote.registerInto(current)
        try await remote.bringUp()
        if let transcript = scenario["transcript"], transcript != .null {
            try current.setTranscript(transcript: Transcript.fromJson(json: transcript.text))
        }
        var last: TurnResult? = nil
        // Extension `chain`: each prompt is the chain's input; a chain that does not read is the
        // trace's `chain_error` (nothing runs).
        let chain = scenario["chain"].flatMap { $0 == .null ? nil : $0.text }
        var chainError: String? = nil
        // Extension `step`: the prompt is one turn the runner steps (its only prompt).
        var stepped: Stepped? = nil
        if let spec = scenario["step"], spec != .null {
            let s = Stepped(spec)
            last = try await s.run(current, prompts[0], &events) { try self.build(config) } release: { self.release() }
            stepped = s
        }
        for (i, prompt) in prompts.enumerated() {
            if stepped != nil { break }
            if restart && i > 0 {
                // save the conversation as JSON, continue in a new client built from it
                let saved = current.transcript().toJson()
                release()
                current = try build(config)
                try current.setTranscript(transcript: Transcript.fromJson(json: saved))
                try remote.registerInto(current)
            }
            let run: Run
            // Extension `run_settings`: the first prompt's run has its own model settings.
            let settings = i == 0 ? scenario["run_settings"].flatMap { $0 == .null ? nil : $0.text } : nil
            // Extension `run_output_schema`: the first prompt's run has its own output schema.
            let outputSchema = i == 0 ? scenario["run_output_schema"].flatMap { $0 == .null ? nil : $0.text } : nil
            if let chain {
                do {
                    run = try await current.streamChain(chainJson: chain, input: prompt, settingsJson: settings)
                } catch let error as ContenoxError {
                    guard case .Config(let detail, _, _, _) = error else { throw error }
                    chainError = detail
                    break
                }
            } else {
                // Extension `prompt_parts`: the first prompt as parts, image data as Data.
                let parts = i == 0 ? scenario["prompt_parts"]?.array.map(swiftParts) : nil
                do {
                    if let parts {
                        run = try await current.streamParts(parts: parts, settingsJson: settings, outputSchemaJson: outputSchema)
                    } else {
                        run = try await current.stream(prompt: prompt, settingsJson: settings, outputSchemaJson: outputSchema)
                    }
                } catch let error as ContenoxError {
                    release()
                    return try await refused(error)
                }
            }
            for await event in run.events {
                for (n, action) in actions.enumerated() where !fired[n] {
                    guard let on = action["on"]?.string, matches(event, on) else { continue }
                    fired[n] = true
                    let todo = action["do"] ?? .null
                    if todo.string == "cancel" {
                        run.cancel()
                    } else if let registered = todo["register"]?["name"]?.string {
                        try current.register(tool: echoTool(registered, nil))
                    } else {
                        throw RunnerError("unknown action \(todo.text)")
                    }
                }
                events.append(event.toJson())
            }
            last = try await run.result()
        }
        // Extension `resume`: the last turn suspended; a client built again from the same parts
        // resumes it from its checkpoint with `answers` (under `policy` when given, after
        // `wait_ms`, from a checkpoint `edit`ed to be `tampered` or `newer`, a second time when
        // `twice`). A refusal is the trace's `resume_error`.
        var resumeError: String? = nil
        if let spec = scenario["resume"], spec != .null {
            guard let saved = last?.checkpoint else { throw RunnerError("resume: the turn did not suspend") }
            let checkpoint = try editCheckpoint(saved, spec["edit"]?.string)
            if let wait = spec["wait_ms"]?.int {
                try await Task.sleep(nanoseconds: UInt64(max(0, wait)) * 1_000_000)
            }
            release()
            current = try build(config)
            if let policy = spec["policy"], policy != .null {
                try current.setPolicy(policy: policy.text)
            }
            var answers: [String: Answer] = [:]
            for (id, a) in spec["answers"]?.object ?? [:] { answers[id] = answerOf(a) }
            for _ in 0..<((spec["twice"]?.bool ?? false) ? 2 : 1) {
                let run: Run
                do {
                    run = try await current.resumeStream(checkpoint: checkpoint, answers: answers)
                } catch let error as ContenoxError {
                    guard case .Checkpoint(let detail) = error else { throw error }
                    resumeError = detail
                    break
                }
                for await event in run.events { events.append(event.toJson()) }
                last = try await run.result()
            }
        }
        let told: [String] = locked { compactions }
        if let settle = scenario["settle_ms"]?.int {
            try await Task.sleep(nanoseconds: UInt64(max(0, settle)) * 1_000_000)
        }
        let requests = try await server.requests()
        let remoteRequests = try await remote.requests()
        let eventsText = "[" + events.joined(separator: ",") + "]"
        if let chainError {
            return "{\"scenario\":\(jsonQuote(name)),\"binding\":\"swift\",\"outcome\":null,\"final_text\":null,\"usage\":null"
                + ",\"events\":\(eventsText),\"requests\":\(requests),\"workspace\":\(snapshot())"
                + ",\"chain_error\":\(jsonQuote(chainError))}"
        }
        guard let result = last else { throw RunnerError("no turn ran") }
        let u = result.usage
        return "{\"scenario\":\(jsonQuote(name)),\"binding\":\"swift\""
            + ",\"outcome\":\(jsonQuote(outcomeName(outcome: result.outcome)))"
            + ",\"final_text\":\(jsonQuote(result.finalText))"
            + ",\"usage\":{\"input_tokens\":\(u.inputTokens),\"output_tokens\":\(u.outputTokens)"
            + ",\"cache_read_input_tokens\":\(u.cacheReadInputTokens)"
            + ",\"cache_creation_input_tokens\":\(u.cacheCreationInputTokens)"
            + ",\"reasoning_tokens\":\(u.reasoningTokens)}"
            + ",\"events\":\(eventsText),\"requests\":\(requests),\"workspace\":\(snapshot())"
            + ",\"remote_requests\":\(remoteRequests)"
            + ",\"compactions\":[\(told.joined(separator: ","))]"
            + (resumeError.map { ",\"resume_error\":\(jsonQuote($0))" } ?? "")
            + (lifecycle.map { ",\"lifecycle\":" + JSON.array($0.calls().map { .string($0) }).text } ?? "")
            + (stepped?.traceMembers() ?? "")
            + ",\"output\":\(result.outputJson ?? "null")}"
    }

    /// Extension `step` (tests/conformance/README.md): the prompt as a turn stepped by the runner
    /// through `client.step`, every action performed (an ask's `perform` asks the scripted
    /// `waitFor`); with `wrong_feed`, a result for no waiting action is fed before the first action
    /// is answered and after done (each refusal's text is a `step_errors` entry); with `replay`, a
    /// client built again steps the same prompt from the first stepper's `options()` and is fed its
    /// `journal()` (the fake server's script is used up: real I/O would show).
    final class Stepped {
        private let spec: JSON
        private var actions: [JSON] = []
        private var replayActions: [JSON] = []
        private var errors: [JSON] = []
        private var turnId = ""
        private var replayFinalText: String? = nil
        /// The most actions a stepped turn may take (a bound, not an expectation).
        private static let maxActions = 200

        init(_ spec: JSON) { self.spec = spec }

        private func json(_ a: Action) -> JSON {
            switch a {
            case .modelRequest(_, let step, _):
                return .object(["kind": .string("model_request"), "step": .int(Int64(step))])
            case .summaryRequest(_, let step, _):
                return .object(["kind": .string("summary_request"), "step": .int(Int64(step))])
            case .toolCall(let call, let key):
                return .object(["kind": .string("tool_call"), "name": .string(call.name), "call_id": .string(call.id),
                                "idempotency_key": .string(key)])
            case .ask(let request):
                return .object(["kind": .string("ask"), "call_id": .string(request.callId)])
            case .done:
                return .object(["kind": .string("done")])
            }
        }

        /// A feed that must be refused: its message is a `step_errors` entry (none if it was not).
        private func refused(_ feed: () throws -> Void) throws {
            do {
                try feed()
            } catch ContenoxError.Step(let detail) {
                errors.append(.string(detail))
            }
        }

        /// Step the turn; its result. `again` builds the replay's client after `release`.
        func run(_ client: Client, _ prompt: String, _ events: inout [String],
                 again: () throws -> Client, release: () -> Void) async throws -> TurnResult {
            let wrongFeed = spec["wrong_feed"]?.bool ?? false
            let stepper = try await client.step(prompt: prompt)
            turnId = stepper.turnId()
            if wrongFeed {
                _ = try await stepper.next()
                try refused {
                    try stepper.feed(result: .toolResult(
                        callId: "nope", output: ToolOutput(content: "x", isError: false, metadataJson: nil)))
                }
            }
            var done: TurnResult? = nil
            for _ in 0..<Stepped.maxActions {
                let action = try await stepper.next()
                actions.append(json(action))
                if case .done(let result) = action {
                    done = result
                    break
                }
                _ = try await stepper.perform()
                events += stepper.events().map { $0.toJson() }
            }
            events += stepper.events().map { $0.toJson() }
            guard let result = done else { throw RunnerError("step: no done after \(Stepped.maxActions) actions") }
            if wrongFeed {
                try refused { try stepper.feed(result: .answer(callId: "nope", answer: .approve)) }
            }
            if spec["replay"]?.bool ?? false {
                let journal = stepper.journal()
                let options = stepper.options()
                release()
                let replay = try await again().step(prompt: prompt, options: options)
                for n in 0...journal.count {
                    let action = try await replay.next()
                    replayActions.append(json(action))
                    if case .done(let r) = action {
                        replayFinalText = r.finalText
                        break
                    }
                    // a refusal here is the runner's error: the scenario fails
                    guard n < journal.count else { throw RunnerError("replay: an action beyond the journal") }
                    try replay.feed(result: journal[n])
                }
            }
            return result
        }

        /// The trace's step members, each after a comma.
        func traceMembers() -> String {
            var out = ",\"turn_id\":\(jsonQuote(turnId)),\"actions\":\(JSON.array(actions).text)"
                + ",\"step_errors\":\(JSON.array(errors).text)"
            if spec["replay"]?.bool ?? false {
                out += ",\"replay_actions\":\(JSON.array(replayActions).text)"
                    + ",\"replay_final_text\":\(replayFinalText.map(jsonQuote) ?? "null")"
            }
            return out
        }
    }

    /// Shut down and drop the current client, if any (the last reference frees it).
    private func release() {
        let c: Client? = locked { let c = client; client = nil; return c }
        c?.shutdown()
    }

    private func writeWorkspace() throws {
        guard let ws = scenario["workspace"]?.object else { return }
        for (path, content) in ws {
            let full = root + "/" + path
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try (content.string ?? "").write(toFile: full, atomically: false, encoding: .utf8)
        }
    }

    /// Every file under the root: relative "/"-separated path -> content (invalid UTF-8 as U+FFFD).
    private func snapshot() -> String {
        let fm = FileManager.default
        var files: [String] = []
        if let walker = fm.enumerator(atPath: root) {
            while let rel = walker.nextObject() as? String {
                var isDir: ObjCBool = false
                if fm.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue { files.append(rel) }
            }
        }
        let members = files.sorted().map { rel -> String in
            let data = fm.contents(atPath: root + "/" + rel) ?? Data()
            return jsonQuote(rel) + ":" + jsonQuote(String(decoding: data, as: UTF8.self))
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    private func clientConfig(_ baseUrl: String) -> String {
        var cfg = scenario["config"]?.object ?? [:]
        // `websearch` is a provider the host supplies (see `searchProvider`), not a core option
        cfg["websearch"] = nil
        cfg["style"] = scenario["style"] ?? .null
        // A `fallback` entry of another style without a base URL talks to the fake server too
        // (it serves every style's chat endpoint).
        if let entries = cfg["fallback"]?.array {
            let style = scenario["style"]?.string ?? ""
            let serverRoot = baseUrl.hasSuffix("/v1") ? String(baseUrl.dropLast(3)) : baseUrl
            cfg["fallback"] = .array(entries.map { entry in
                guard var f = entry.object, let other = f["style"]?.string, other != style,
                      f["base_url"] == nil else { return entry }
                f["base_url"] = .string(other.hasPrefix("openai") ? serverRoot + "/v1" : serverRoot)
                return .object(f)
            })
        }
        cfg["base_url"] = .string(baseUrl)
        cfg["model"] = .string("fake")
        cfg["api_key"] = .string("test")
        cfg["root"] = .string(root)
        return JSON.object(cfg).text
    }

    private func build(_ config: String) throws -> Client {
        let tools = try (scenario["host_tools"]?.array ?? []).map(hostToolOf)
        let built = try Client(
            configJson: config, tools: tools, hooks: RuleHooks(scenario), waitFor: ScriptedWaitFor(self),
            websearch: try searchProvider(), onCompact: CompactRecorder(self), lifecycle: lifecycle)
        let wasAborted: Bool = locked {
            client = built
            return aborted
        }
        if wasAborted { built.shutdown() }
        for sub in subagentSpecs where sub["in_parent"]?.bool ?? true {
            try built.register(tool: subagentTool(sub["name"]?.string ?? ""))
        }
        return built
    }

    /// Every subagent's client (same server and root; its own `before_tool` and `wait_for` only
    /// when given), then the subagents each one lists registered into it.
    private func buildSubagents(_ baseUrl: String) throws {
        var built: [Client] = []
        for sub in subagentSpecs {
            var cfg = sub["config"]?.object ?? [:]
            cfg["style"] = scenario["style"] ?? .null
            cfg["base_url"] = .string(baseUrl)
            cfg["model"] = .string("fake")
            cfg["api_key"] = .string("test")
            cfg["root"] = .string(root)
            let tools = try (sub["host_tools"]?.array ?? []).map(hostToolOf)
            let hooks: Hooks? = sub["before_tool"] != nil ? RuleHooks(sub) : nil
            let waitFor: WaitFor? = sub["wait_for"]?.array.map { ScriptedWaitFor(Answers($0)) }
            built.append(try Client(configJson: JSON.object(cfg).text, tools: tools, hooks: hooks, waitFor: waitFor))
        }
        locked { subagents = built }
        for (i, sub) in subagentSpecs.enumerated() {
            for other in sub["subagents"]?.array ?? [] {
                try built[i].register(tool: subagentTool(other.string ?? ""))
            }
        }
    }

    private func subagentTool(_ name: String) throws -> SourceTool {
        guard let i = subagentSpecs.firstIndex(where: { $0["name"]?.string == name }) else {
            throw RunnerError("no subagent \(name)")
        }
        let sub = subagentSpecs[i]
        let description = sub["description"]?.string ?? "The subagent \(name)."
        let options = sub["options"].flatMap { $0 == .null ? nil : $0.text }
        let client: Client = locked { subagents[i] }
        return try client.asToolWith(name: name, description: description, optionsJson: options)
    }

    /// `config.websearch`: false/absent = off; `{"results": [...]}` = a provider answering every
    /// query with those results (the engine filters and caps them).
    private func searchProvider() throws -> WebSearchProvider? {
        guard let ws = scenario["config"]?["websearch"], ws != .null, ws != .bool(false) else { return nil }
        guard let results = ws["results"]?.array else {
            throw RunnerError("websearch must be false or {\"results\": [...]}, got \(ws.text)")
        }
        return FixedSearch(results.map {
            SearchResult(title: $0["title"]?.string ?? "", url: $0["url"]?.string ?? "", snippet: $0["snippet"]?.string ?? "")
        })
    }

    /// `type[:name][@agent]`: `@a/b` a subagent chain, `@*` any subagent, `@` the client's own;
    /// no `@` = any origin.
    private func matches(_ event: Event, _ pattern: String) -> Bool {
        var p = Substring(pattern)
        var agent: Substring? = nil
        if let at = p.firstIndex(of: "@") {
            agent = p[p.index(after: at)...]
            p = p[..<at]
        }
        let kind = p.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let name = p.contains(":") ? String(p[p.index(after: p.firstIndex(of: ":")!)...]) : nil
        if event.kind() != kind { return false }
        if let name, event.toolName() != name { return false }
        let chain = event.agent()
        switch agent {
        case nil: return true
        case "*": return !chain.isEmpty
        case let a?: return chain.joined(separator: "/") == a
        }
    }

    private func specOf(_ t: JSON) -> ToolSpec {
        let h = t["hints"]
        let name = t["name"]?.string ?? ""
        let schema = t["schema"].flatMap { $0 == .null ? nil : $0.text } ?? "{\"type\":\"object\"}"
        return ToolSpec(
            name: name,
            description: t["description"]?.string ?? "Host tool \(name) (\(t["kind"]?.string ?? ""))).",
            inputSchemaJson: schema,
            hints: Hints(readOnly: h?["readOnly"]?.bool, destructive: h?["destructive"]?.bool, openWorld: h?["openWorld"]?.bool),
            tier: t["tier"]?.string == "deferred" ? .deferred : .core)
    }

    private func rendezvous(_ args: JSON) async throws -> String {
        let count = args["count"]?.int ?? 1
        let deadline = Date().addingTimeInterval(Double(args["timeout_ms"]?.int ?? 5000) / 1000)
        let (entered, seen): (Int, Int) = locked {
            meetingRunning += 1
            let e = meetingEpoch
            if meetingRunning >= count { meetingEpoch += 1 }
            return (e, meetingRunning)
        }
        defer { locked { meetingRunning -= 1 } }
        let over = args["max"]?.int.map { seen > $0 ? "; over max: \(seen) running" : "" } ?? ""
        while true {
            let (now, epoch): (Int, Int) = locked { (meetingRunning, meetingEpoch) }
            if epoch > entered {
                try await Task.sleep(nanoseconds: UInt64(max(0, args["hold_ms"]?.int ?? 0)) * 1_000_000)
                return "met \(count)\(over)"
            }
            if Date() >= deadline { return "timed out with \(now) running\(over)" }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    private func echoTool(_ name: String, _ spec: ToolSpec?) -> HostTool {
        hostTool(spec ?? ToolSpec(name: name, description: "Echo the arguments.", inputSchemaJson: "{\"type\":\"object\"}",
                                  hints: Hints(), tier: .core)) { args, _ in
            ToolOutput(content: args, isError: false, metadataJson: nil)
        }
    }

    private func hostToolOf(_ t: JSON) throws -> HostTool {
        let spec = specOf(t)
        switch t["kind"]?.string ?? "" {
        case "echo":
            return echoTool(spec.name, spec)
        case "fail":
            // the language's ordinary error
            return hostTool(spec) { args, _ in
                throw ToolFailure(message: (try? JSON.parse(args))?["message"]?.string ?? "failed")
            }
        case "sleep":
            return hostTool(spec) { args, _ in
                let ms = (try? JSON.parse(args))?["ms"]?.int ?? 0
                try await Task.sleep(nanoseconds: UInt64(max(0, ms)) * 1_000_000)
                return ToolOutput(content: "slept", isError: false, metadataJson: nil)
            }
        case "rendezvous":
            return hostTool(spec) { args, _ in
                ToolOutput(content: try await self.rendezvous((try? JSON.parse(args)) ?? .null), isError: false, metadataJson: nil)
            }
        case "register":
            // (holds the run: the cycle ends when the run releases its clients)
            return hostTool(spec) { args, _ in
                guard let name = (try? JSON.parse(args))?["name"]?.string else { throw ToolFailure(message: "no name") }
                guard let c: Client = self.locked({ self.client }) else {
                    throw ToolFailure(message: "the client is not built yet")
                }
                try c.register(tool: self.echoTool(name, nil))
                return ToolOutput(content: "registered", isError: false, metadataJson: nil)
            }
        case let kind:
            throw RunnerError("unknown host tool kind \(kind)")
        }
    }

    // The answers of the scenario's own `wait_for`, taken in order by every ask.
    fileprivate func nextAnswer() -> JSON? {
        locked { answers.isEmpty ? nil : answers.removeFirst() }
    }

    fileprivate func recordCompaction(_ notice: CompactNotice) {
        var o: [String: JSON] = [
            "trigger": .string(notice.trigger == .auto ? "auto" : "manual"),
            "pre_tokens": .int(Int64(notice.preTokens)),
            "post_tokens": .int(Int64(notice.postTokens)),
            "usage": .object([
                "input_tokens": .int(Int64(notice.usage.inputTokens)),
                "output_tokens": .int(Int64(notice.usage.outputTokens)),
            ]),
        ]
        if let summary = notice.summary { o["summary"] = .string(summary) }
        locked { compactions.append(JSON.object(o).text) }
    }
}

/// The error a `fail` host tool throws: an ordinary Swift error, not a `ContenoxError`.
struct ToolFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A rule's `match` against a call.
private func ruleMatches(_ m: JSON, _ call: ToolCallEvent) -> Bool {
    if let name = m["name"]?.string, name != call.name { return false }
    if let hint = m["hint"]?.string {
        let v: Bool?
        switch hint {
        case "readOnly": v = call.hints.readOnly
        case "destructive": v = call.hints.destructive
        case "openWorld": v = call.hints.openWorld
        default: return false
        }
        if v != true { return false }
    }
    if let noHints = m["no_hints"]?.bool {
        let none = call.hints.readOnly == nil && call.hints.destructive == nil && call.hints.openWorld == nil
        if none != noHints { return false }
    }
    if let source = m["source"]?.string, source != sourceName(call.source) { return false }
    if let server = m["server"]?.string, server != call.server { return false }
    return true
}

/// The engine's name of a tool source: the Swift case name in snake_case (`.mcp` -> "mcp"), as
/// Kotlin's runner lowercases the enum's name, so a new source needs no change here.
func sourceName(_ source: Source) -> String {
    String(describing: source).reduce(into: "") { out, c in
        if c.isUppercase { out += "_" + c.lowercased() } else { out.append(c) }
    }
}

/// The JSON text of a value, strings as they are (what the engine sends of a JSON result).
private func resultText(_ v: JSON) -> String {
    if case .string(let s) = v { return s }
    return v.text
}

/// The scenario's `before_tool` / `after_tool` rules as `Hooks`.
final class RuleHooks: Hooks, @unchecked Sendable {
    private let before: [JSON]
    private let after: [JSON]

    init(_ scenario: JSON) {
        before = scenario["before_tool"]?.array ?? []
        after = scenario["after_tool"]?.array ?? []
    }

    func beforeTool(call: ToolCallEvent) async throws -> Decision {
        guard let rule = before.first(where: { ruleMatches($0["match"] ?? .object([:]), call) }) else { return .allow }
        let d = rule["decision"] ?? .null
        if d.string == "allow" { return .allow }
        if let deny = d["deny"] { return .deny(message: deny.string) }
        if let ask = d["ask"] {
            return .ask(
                kind: ask["kind"]?.string ?? "approval",
                prompt: ask["prompt"]?.string,
                timeoutMs: ask["timeout_ms"]?.int.map { UInt64(max(0, $0)) },
                dataJson: nil)
        }
        throw RunnerError("unknown decision \(d.text)")
    }

    func afterTool(call: ToolCallEvent, result: ToolOutput) async throws -> ToolOutput? {
        guard let rule = after.first(where: { ruleMatches($0["match"] ?? .object([:]), call) }) else { return nil }
        return ToolOutput(content: resultText(rule["replace"] ?? .null), isError: false, metadataJson: nil)
    }
}

/// A queue of `wait_for` answers (a subagent's own list).
final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var queue: [JSON]
    init(_ answers: [JSON]) { queue = answers }
    func next() -> JSON? {
        lock.lock()
        defer { lock.unlock() }
        return queue.isEmpty ? nil : queue.removeFirst()
    }
}

/// The answers in order; `"never"` (or running out) waits until the engine stops waiting, which
/// cancels this Task.
final class ScriptedWaitFor: WaitFor, @unchecked Sendable {
    private let next: () -> JSON?
    init(_ run: ScenarioRun) { next = { run.nextAnswer() } }
    init(_ answers: Answers) { next = answers.next }

    func waitFor(request: PendingRequest) async throws -> Answer {
        let answer = next() ?? .string("never")
        if answer.string == "never" {
            while true { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        }
        return answerOf(answer)
    }
}

/// A scenario's answer object as the binding's `Answer`.
func answerOf(_ answer: JSON) -> Answer {
    if let result = answer["result"] { return .result(valueJson: result.text) }
    if answer["suspend"]?.bool == true { return .suspend }
    if answer["approve"]?.bool == true { return .approve }
    return .deny(message: answer["message"]?.string)
}

/// Extension `resume.edit`: `newer` raises the version, `tampered` changes the first call's
/// arguments (its digest no longer matches).
func editCheckpoint(_ checkpoint: String, _ edit: String?) throws -> String {
    guard let edit else { return checkpoint }
    guard var cp = try JSONSerialization.jsonObject(with: Data(checkpoint.utf8)) as? [String: Any] else {
        throw RunnerError("resume: the checkpoint is not an object")
    }
    switch edit {
    case "newer":
        cp["version"] = ((cp["version"] as? Int) ?? 0) + 1
    case "tampered":
        guard var reply = cp["reply"] as? [String: Any], var calls = reply["calls"] as? [[String: Any]],
              var first = calls.first, var args = first["arguments"] as? [String: Any] else {
            throw RunnerError("resume: the checkpoint has no call to tamper with")
        }
        args["tampered"] = true
        first["arguments"] = args
        calls[0] = first
        reply["calls"] = calls
        cp["reply"] = reply
    default:
        throw RunnerError("resume.edit: \(edit) is not newer or tampered")
    }
    return String(decoding: try JSONSerialization.data(withJSONObject: cp), as: UTF8.self)
}

final class CompactRecorder: OnCompact, @unchecked Sendable {
    private let run: ScenarioRun
    init(_ run: ScenarioRun) { self.run = run }
    func onCompact(notice: CompactNotice) async throws { run.recordCompaction(notice) }
}

final class FixedSearch: WebSearchProvider, @unchecked Sendable {
    private let results: [SearchResult]
    init(_ results: [SearchResult]) { self.results = results }
    func search(request: SearchRequest) async throws -> [SearchResult] { results }
}

/// The fake model server, a child process that exits when its stdin closes.
final class FakeServer: @unchecked Sendable {
    private let child: Child
    let port: Int

    private init(_ child: Child, _ port: Int) {
        self.child = child
        self.port = port
    }

    static func start(file: String) async throws -> FakeServer {
        let child = try Child(Paths.fakeServer, ["--scenario", file])
        guard let line = await child.nextLine(), let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            await child.kill()
            throw RunnerError("fake-model-server printed no port")
        }
        return FakeServer(child, port)
    }

    func baseUrl(_ style: String) -> String {
        style.hasPrefix("openai") ? "http://127.0.0.1:\(port)/v1" : "http://127.0.0.1:\(port)"
    }

    func requests() async throws -> String {
        let (status, body) = try await httpLoopback("GET", port: port, path: "/_fake/requests")
        guard status == 200 else { throw RunnerError("GET /_fake/requests: \(status)") }
        return body
    }

    func stop() async { await child.stop() }
}

/// A scenario's `prompt_parts` as a Swift host writes them: image data as `Data`.
private func swiftParts(_ parts: [JSON]) -> [PromptPart] {
    parts.map { p in
        if p["type"]?.string == "text" { return .text(text: p["text"]?.string ?? "") }
        if let data = p["data"]?.string {
            return .image(data: Data(base64Encoded: data) ?? Data(), mediaType: p["media_type"]?.string)
        }
        return .imagePath(path: p["path"]?.string ?? "")
    }
}

struct LifecycleRaised: Error, CustomStringConvertible {
    let description: String
}

/// Extension `lifecycle`: for each point named, the answer every call gives (core's JSON form as
/// the binding's types; `true` for an observer) or `"raise"`; every call is logged as `point` or
/// `point:detail` before it answers. Points not named answer as the protocol extension does.
final class ScenarioLifecycle: LifecycleHooks, @unchecked Sendable {
    private let spec: [String: JSON]
    private let lock = NSLock()
    private var log: [String] = []

    init(_ spec: [String: JSON]) { self.spec = spec }

    func calls() -> [String] { lock.lock(); defer { lock.unlock() }; return log }

    /// The point's given answer as (tag, text), nil for its default; throws for "raise". Nil
    /// without logging when the scenario does not name the point.
    private func answer(_ point: String, _ entry: String) throws -> (String, String)? {
        guard let given = spec[point] else { return nil }
        lock.lock(); log.append(entry); lock.unlock()
        if given.string == "raise" { throw LifecycleRaised(description: "\(point) raised") }
        if let first = given.object?.first, let text = first.value.string { return (first.key, text) }
        return nil
    }

    func onPrompt(prompt: String) async throws -> PromptAction {
        guard let a = try answer("on_prompt", "on_prompt") else { return .`continue` }
        switch a.0 {
        case "replace": return .replace(a.1)
        case "add_context": return .addContext(a.1)
        default: return .refuse(a.1)
        }
    }

    func onStop(finalText: String) async throws -> StopAction {
        guard let a = try answer("on_stop", "on_stop") else { return .stop }
        return .`continue`(a.1)
    }

    func beforeCompact(request: CompactRequest) async throws -> CompactAction {
        let trigger = request.trigger == .auto ? "auto" : "manual"
        guard let a = try answer("before_compact", "before_compact:\(trigger)") else { return .proceed }
        return a.0 == "veto" ? .veto(a.1) : .instructions(a.1)
    }

    func onToolError(call: ToolCallEvent, result: ToolOutput) async throws {
        _ = try answer("on_tool_error", "on_tool_error:\(call.name)")
    }

    func onTurnStart(prompt: String) async throws {
        _ = try answer("on_turn_start", "on_turn_start")
    }

    func onTurnEnd(end: TurnEndInfo) async throws {
        _ = try answer("on_turn_end", "on_turn_end:\(outcomeName(outcome: end.outcome))")
    }

    func onNotification(notification: Contenox.Notification) async throws {
        let kind = notification.kind == .ask ? "ask" : "budget_near"
        _ = try answer("on_notification", "on_notification:\(kind)")
    }
}
