// The tool sources a scenario brings: its `mcp` servers (loaded with `loadMcp`) and its `remote`
// services (served by fake-remote-service, loaded with `loadRemote`), as the Kotlin runner and
// the Rust runner's mcp_support.rs / remote_support.rs do it.

import Contenox
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Names reported by a listener, from any thread.
final class Reports: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []
    func add(_ name: String) { lock.sync { names.append(name) } }
    var all: [String] { lock.sync { names } }
}

/// The program `name` on PATH.
func which(_ name: String) throws -> String {
    if name.contains("/") { return name }
    for dir in (Paths.env["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw RunnerError("\(name) is not on PATH")
}

/// Every live descendant of `pid`, read from /proc.
func descendants(of pid: Int32) -> [Int32] {
    var children: [Int32: [Int32]] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let p = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        // after "pid (comm) ": state, ppid, ...
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, let ppid = Int32(fields[1]) { children[ppid, default: []].append(p) }
    }
    var out: [Int32] = []
    var queue = [pid]
    while let next = queue.popLast() {
        for c in children[next] ?? [] {
            out.append(c)
            queue.append(c)
        }
    }
    return out
}

/// The scenario key `mcp` (tests/conformance/README.md): the project's test servers
/// (tests/mcp, installed by tests/mcp/install.sh) as an `mcpServers` config, loaded with
/// `loadMcp` and registered into the client with `registerInto` (plus `resourceTools()` when
/// asked). A server that does not come up fails the scenario. The runner starts the
/// `"transport": "http"` servers itself and stops them at the end.
final class McpSetup: @unchecked Sendable {
    private let lock = NSLock()
    private var source: McpSource?
    private var resourceTools = false
    private var http: [Child] = []

    func start(_ spec: JSON) async throws {
        resourceTools = spec["resource_tools"]?.bool ?? false
        guard let servers = spec["servers"]?.object else { throw RunnerError("mcp: \"servers\" must be an object") }
        var entries: [String: JSON] = [:]
        for name in servers.keys.sorted() {
            let s = servers[name]!
            guard let server = s["server"]?.string, !server.isEmpty else {
                throw RunnerError("mcp: server \(name) needs \"server\"")
            }
            var entry: [String: JSON]
            switch s["transport"]?.string ?? "stdio" {
            case "stdio":
                let (command, args) = try commandOf(server, port: nil)
                entry = ["command": .string(command), "args": .array(args.map { .string($0) })]
            case "http":
                entry = ["type": .string("http"), "url": .string(try await startHttp(server))]
            case let transport:
                throw RunnerError("mcp: unknown transport \(transport)")
            }
            for key in ["inject", "headers", "timeout_ms", "env", "elicitation", "sampling", "roots"] {
                if let v = s[key] { entry[key] = v }
            }
            entries[name] = .object(entry)
        }
        let reported = Reports()
        let loaded = try await loadMcp(configJson: JSON.object(["mcpServers": .object(entries)]).text) { name, _ in
            reported.add(name)
        }
        lock.sync { source = loaded }
        // every server was reported to the listener before loadMcp returned
        if reported.all.sorted() != entries.keys.sorted() {
            throw RunnerError("mcp: onServer reported \(reported.all), expected \(entries.keys.sorted())")
        }
        let failed = loaded.servers().compactMap { s -> String? in
            if case .failed(let error) = s.state { return "mcp: server \(s.name) failed: \(error)" }
            return nil
        }
        if !failed.isEmpty { throw RunnerError(failed.joined(separator: "\n")) }
    }

    func registerInto(_ client: Client) throws {
        guard let src = lock.sync({ source }) else { return }
        try src.registerInto(client: client)
        if resourceTools {
            for tool in src.resourceTools() { try client.register(tool: tool) }
        }
    }

    /// Stop the MCP servers (and free the source), and the HTTP servers this runner started.
    func close() async {
        let (src, children) = lock.sync {
            defer { source = nil; http = [] }
            return (source, http)
        }
        await src?.shutdown()
        for child in children {
            for pid in descendants(of: child.pid) { _ = kill(pid, SIGKILL) }
            await child.kill()
        }
    }

    private func installed(_ path: String, _ what: String) throws -> String {
        guard FileManager.default.fileExists(atPath: path) else {
            throw RunnerError("\(what) not found at \(path): run tests/mcp/install.sh")
        }
        return path
    }

    /// The Python with the `mcp` SDK: $CONTENOX_MCP_PYTHON or tests/mcp/.venv.
    private func python() throws -> String {
        try Paths.env["CONTENOX_MCP_PYTHON"] ?? installed(Paths.repo + "/tests/mcp/.venv/bin/python", "the MCP venv")
    }

    /// The program and arguments of a test server, over stdio or over HTTP on `port`.
    private func commandOf(_ server: String, port: Int?) throws -> (String, [String]) {
        switch server {
        case "fast":
            let script = try installed(Paths.repo + "/tests/mcp/fast_server.py", "fast_server.py")
            return (try python(), [script] + (port.map { ["http", String($0)] } ?? []))
        case "everything":
            let modules = Paths.env["CONTENOX_MCP_NODE_MODULES"] ?? Paths.repo + "/tests/mcp/node_modules"
            let js = try installed(modules + "/@modelcontextprotocol/server-everything/dist/index.js",
                                   "@modelcontextprotocol/server-everything")
            return ("node", [js, port != nil ? "streamableHttp" : "stdio"])
        default:
            throw RunnerError("mcp: unknown test server \"\(server)\" (expected \"fast\" or \"everything\")")
        }
    }

    /// Start a test server over streamable HTTP on a free port; its URL once it listens.
    private func startHttp(_ server: String) async throws -> String {
        let port = try freePort()
        let (command, args) = try commandOf(server, port: port)
        var env = Paths.env
        env["PORT"] = String(port)
        let child = try Child(try which(command), args, environment: env, discardOutput: true)
        lock.sync { http.append(child) }
        let deadline = Date().addingTimeInterval(20)
        while !listening(port) {
            guard Date() < deadline else { throw RunnerError("mcp: \(server) over HTTP did not listen on \(port)") }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return "http://127.0.0.1:\(port)/mcp"
    }
}

/// The scenario key `remote` (tests/conformance/README.md): `fake-remote-service --scenario
/// FILE` serves the scenario's services and prints `{control, hooks, services}`; the hooks are
/// loaded with `loadRemote` and registered into the client; the `unreachable` ones are started
/// (`POST /_fake/up`) before the first prompt, and `GET /_fake/remote_requests` is the trace's
/// `remote_requests`.
final class RemoteSetup: @unchecked Sendable {
    private let file: String
    private let lock = NSLock()
    private var child: Child?
    private var source: RemoteSource?
    private var control = 0
    private var unreachable = false

    init(file: String) { self.file = file }

    func start(_ services: [JSON]) async throws {
        let c = try Child(Paths.fakeRemote, ["--scenario", file])
        lock.sync { child = c }
        guard let line = await c.nextLine() else { throw RunnerError("fake-remote-service printed nothing") }
        let info = try JSON.parse(line)
        guard let port = info["control"]?.int, let hooks = info["hooks"]?.array else {
            throw RunnerError("fake-remote-service printed \(line)")
        }
        control = Int(port)
        let reported = Reports()
        let loaded = try await loadRemote(hooksJson: JSON.array(hooks).text) { name, _ in reported.add(name) }
        lock.sync { source = loaded }
        let names = hooks.compactMap { $0["name"]?.string }
        if reported.all.sorted() != names.sorted() { throw RunnerError("remote: onHook reported \(reported.all)") }
        for (i, h) in loaded.hooks().enumerated() {
            let down = i < services.count && services[i]["unreachable"]?.bool == true
            unreachable = unreachable || down
            var ready = false
            if case .ready = h.state { ready = true }
            if ready == down {
                throw RunnerError("remote: hook \(h.name) should be \(down ? "down" : "ready"): \(h.state)")
            }
        }
    }

    func registerInto(_ client: Client) throws {
        try lock.sync({ source })?.registerInto(client: client)
    }

    private func send(_ method: String, _ path: String) async throws -> String {
        let (status, body) = try await httpLoopback(method, port: control, path: path)
        guard status == 200 else { throw RunnerError("\(method) \(path): \(status) \(body)") }
        return body
    }

    func bringUp() async throws {
        if unreachable { _ = try await send("POST", "/_fake/up") }
    }

    func requests() async throws -> String {
        let running = lock.sync { child != nil }
        return running ? try await send("GET", "/_fake/remote_requests") : "[]"
    }

    func close() async {
        let (src, c) = lock.sync {
            defer { source = nil; child = nil }
            return (source, child)
        }
        await src?.shutdown()
        await c?.stop()
    }
}
