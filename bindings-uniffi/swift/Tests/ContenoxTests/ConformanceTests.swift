// The conformance runner of the Swift binding: every scenario of `tests/conformance/scenarios`
// and of each `$CONTENOX_SCENARIOS` directory (without the variable: `../shared/conformance/
// scenarios` beside the repo) runs through the public Swift API against the fake model server,
// and `conformance-check` judges the trace, as in every other binding. One Swift Testing case
// per scenario file. `CONTENOX_ONLY=REGEX` runs the matching files only; `CONTENOX_TRACE_DIR`
// keeps the traces as `NAME.swift.json`; `CONTENOX_SWIFT_JOBS` scenarios run at a time
// (default 2). Each prints `ok   NAME` or `FAIL NAME` (bindings-uniffi/swift/ci.sh counts them).

import Foundation
import Testing

/// Where the repository and the harness binaries are.
enum Paths {
    /// This file is <repo>/bindings-uniffi/swift/Tests/ContenoxTests/ConformanceTests.swift.
    static let repo: String = ProcessInfo.processInfo.environment["CONTENOX_REPO"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let env = ProcessInfo.processInfo.environment
    static let target = env["CARGO_TARGET_DIR"] ?? repo + "/target"
    static let fakeServer = env["FAKE_MODEL_SERVER"] ?? target + "/debug/fake-model-server"
    static let checker = env["CONFORMANCE_CHECK"] ?? target + "/debug/conformance-check"
    static let fakeRemote = env["FAKE_REMOTE_SERVICE"] ?? target + "/debug/fake-remote-service"
}

/// One scenario file (or the reason the list could not be made).
struct ScenarioCase: Sendable, CustomTestStringConvertible {
    let path: String
    let label: String
    var problem: String? = nil
    var testDescription: String { label }
}

enum Scenarios {
    static func cases() -> [ScenarioCase] {
        let fm = FileManager.default
        var dirs = [Paths.repo + "/tests/conformance/scenarios"]
        if let fromEnv = Paths.env["CONTENOX_SCENARIOS"] {
            dirs += fromEnv.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        } else {
            let shared = Paths.repo + "/../shared/conformance/scenarios"
            var isDir: ObjCBool = false
            if fm.fileExists(atPath: shared, isDirectory: &isDir), isDir.boolValue { dirs.append(shared) }
        }
        var only: NSRegularExpression? = nil
        if let pattern = Paths.env["CONTENOX_ONLY"], !pattern.isEmpty {
            do {
                only = try NSRegularExpression(pattern: pattern)
            } catch {
                return [ScenarioCase(path: "", label: "CONTENOX_ONLY", problem: "bad CONTENOX_ONLY \(pattern): \(error)")]
            }
        }
        var seen = Set<String>()
        var names: [String: Int] = [:]
        var out: [ScenarioCase] = []
        for dir in dirs {
            let canonical = URL(fileURLWithPath: dir).resolvingSymlinksInPath().standardizedFileURL.path
            guard seen.insert(canonical).inserted else { continue }
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
                if dir.hasPrefix(Paths.repo) { continue } // the project's own folder may be absent
                out.append(ScenarioCase(path: dir, label: dir, problem: "scenario directory \(dir) does not exist"))
                continue
            }
            let files = ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            for name in files {
                let path = dir + "/" + name
                var isFile: ObjCBool = false
                guard fm.fileExists(atPath: path, isDirectory: &isFile), !isFile.boolValue else { continue }
                if let only, only.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) == nil { continue }
                let base = String(name.dropLast(5))
                names[base, default: 0] += 1
                out.append(ScenarioCase(path: path, label: names[base]! == 1 ? base : "\(base) (\(dir))"))
            }
        }
        if out.isEmpty {
            let why = only == nil ? "set CONTENOX_SCENARIOS" : "none matches CONTENOX_ONLY"
            out.append(ScenarioCase(path: "", label: "no scenarios", problem: "no scenarios found in \(dirs) (\(why))"))
        }
        return out
    }
}

/// At most `permits` scenarios at a time (Swift Testing runs the cases of a parameterized test
/// concurrently, without a bound).
actor Gate {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    init(_ permits: Int) { free = max(1, permits) }

    func acquire() async {
        if free > 0 { free -= 1; return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

let scenarioGate = Gate(Int(Paths.env["CONTENOX_SWIFT_JOBS"] ?? "") ?? 2)

/// Print a line at once (the test's output is read as it comes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

@Suite struct Conformance {
    @Test("conformance scenario", arguments: Scenarios.cases())
    func scenario(_ scenario: ScenarioCase) async throws {
        if let problem = scenario.problem {
            say("FAIL \(scenario.label)\n    \(problem)")
            Issue.record(Comment(rawValue: problem))
            return
        }
        await scenarioGate.acquire()
        let failure: String?
        do {
            failure = try await runAndCheck(scenario.path)
        } catch {
            failure = "\(error)"
        }
        await scenarioGate.release()
        if let failure {
            let indented = failure.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
            say("FAIL \(scenario.label)\n" + indented.joined(separator: "\n"))
            Issue.record(Comment(rawValue: "\(scenario.label): \(failure)"))
        } else {
            say("ok   \(scenario.label)")
        }
    }

    /// Run one scenario and check its trace; nil when it passed, else what failed.
    private func runAndCheck(_ path: String) async throws -> String? {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let scenario = try JSON.parse(text)
        let workdir = FileManager.default.temporaryDirectory
            .appendingPathComponent("contenox-conf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: workdir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: workdir) }
        let run = try ScenarioRun(file: path, scenario: scenario, workdir: workdir)
        let trace: String
        switch try await withDeadline(seconds: 30, work: { try await run.run() }, onExpiry: { await run.abort() }) {
        case .done(let t): trace = t
        case .expired: return "still running after 30 s"
        }
        let traceFile = workdir + "/trace.json"
        try trace.write(toFile: traceFile, atomically: true, encoding: .utf8)
        if let keep = Paths.env["CONTENOX_TRACE_DIR"] {
            try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            let name = scenario["name"]?.string ?? "unnamed"
            try trace.write(toFile: keep + "/\(name).swift.json", atomically: true, encoding: .utf8)
        }
        let check = try Child(Paths.checker, [path, traceFile])
        var output: [String] = []
        while let line = await check.nextLine() { output.append(line) }
        await check.stop(grace: 30)
        let status = check.process.isRunning ? -1 : check.process.terminationStatus
        return status == 0 ? nil : "conformance-check (exit \(status)):\n" + output.joined(separator: "\n")
    }
}

enum Deadline<T: Sendable>: Sendable {
    case done(T)
    case expired
}

/// `work`, or `.expired` when it took more than `seconds`: then `onExpiry` runs, which must make
/// `work` return (by shutting the clients down and stopping the servers).
func withDeadline<T: Sendable>(
    seconds: Double,
    work: @Sendable () async throws -> T,
    onExpiry: @escaping @Sendable () async -> Void
) async throws -> Deadline<T> {
    let expired = Flag()
    let timer = Task {
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        expired.set()
        await onExpiry()
    }
    defer { timer.cancel() }
    let result: Result<T, Error>
    do { result = .success(try await work()) } catch { result = .failure(error) }
    if expired.isSet { return .expired }
    return .done(try result.get())
}

/// A boolean set once, read from any thread.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
