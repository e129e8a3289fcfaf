// OAuth for MCP servers through the Swift API (`loadMcp(configJson:onServer:auth:)` with an
// `McpAuth`), against tests/mcp/oauth_server.py (the MCP Python SDK's own authorization server
// and protected server): the protected server's tools load after the authorization callback, an
// expired token is refreshed and a revoked one authorized again, no token shows in any event or
// transcript, and a browser step that throws fails the server with the reason.

import Contenox
import Foundation
import XCTest

/// The host's part: tokens in a dictionary, a "browser" that follows the authorization URL
/// and hands back the redirect.
final class HostAuth: McpAuth, @unchecked Sendable {
    private let lock = NSLock()
    private var store: [String: String] = [:]
    private(set) var saved: [String] = []
    private(set) var urls: [String] = []

    func redirectUri() -> String { "http://127.0.0.1:9/callback" }

    func authorize(server: String, url: String) async throws -> String {
        lock.sync { urls.append(url) }
        guard let u = URLComponents(string: url), let port = u.port else { throw RunnerError("not a URL: \(url)") }
        let path = u.percentEncodedPath + "?" + (u.percentEncodedQuery ?? "")
        let (status, head, _) = try await httpLoopbackWithHead("GET", port: port, path: path)
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("location:") {
            return line.dropFirst("location:".count).trimmingCharacters(in: .whitespaces)
        }
        throw RunnerError("no redirect: HTTP \(status)")
    }

    func load(key: String) async throws -> String? { lock.sync { store[key] } }

    func save(key: String, value: String) async throws {
        lock.sync {
            store[key] = value
            saved.append(value)
        }
    }

    func tokens() throws -> [String] {
        try lock.sync { saved }.flatMap { v -> [String] in
            let d = try JSON.parse(v)
            return ["access_token", "refresh_token"].compactMap { d[$0]?.string }
        }
    }
}

final class McpAuthTests: XCTestCase {
    private func startVault() async throws -> (Child, Int) {
        let python = Paths.env["CONTENOX_MCP_PYTHON"] ?? Paths.repo + "/tests/mcp/.venv/bin/python"
        let port = try freePort()
        let child = try Child(python, [Paths.repo + "/tests/mcp/oauth_server.py", String(port)], discardOutput: true)
        let deadline = Date().addingTimeInterval(20)
        while !listening(port) {
            if Date() > deadline {
                await child.kill()
                throw RunnerError("oauth_server.py did not listen")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return (child, port)
    }

    private func vaultConfig(_ port: Int) -> String {
        JSON.object(["mcpServers": .object(["vault": .object([
            "type": .string("http"), "url": .string("http://127.0.0.1:\(port)/mcp"),
        ])])]).text
    }

    func testAProtectedServerLoadsAfterTheCallbackRefreshesReauthorizesAndNoTokenShows() async throws {
        let (vault, port) = try await startVault()
        let auth = HostAuth()
        var shown: [String] = []
        do {
            let source = try await loadMcp(configJson: vaultConfig(port), auth: auth)
            XCTAssertEqual(source.tools().map { $0.name() }, ["vault__vault_sum"])
            XCTAssertEqual(auth.urls.count, 1)
            XCTAssertTrue(auth.urls.first?.contains("code_challenge_method=S256") == true)
            // One client for the three turns: shutting a client down stops the servers registered into it.
            let sum = JSON.object(["tool_calls": .array([.object([
                "id": .string("c1"), "name": .string("vault__vault_sum"),
                "arguments": .object(["a": .int(40), "b": .int(2)]),
            ])])])
            let done = JSON.object(["text": .string("done")])
            let config = JSON.object([
                "style": .string("scripted"),
                "builtins": .array([]),
                "script": .array([sum, done, sum, done, sum, done]),
            ]).text
            let client = try Client(configJson: config)
            try source.registerInto(client: client)
            for step in ["first", "expire", "revoke"] {
                if step != "first" {
                    let (status, _) = try await httpLoopback("POST", port: port, path: "/_test/\(step)")
                    XCTAssertEqual(status, 200)
                }
                let run = try await client.stream(prompt: "add")
                var events: [Event] = []
                for await e in run.events { events.append(e) }
                _ = try await run.result()
                let result = try events.filter { $0.kind() == "tool_result" }.map { try JSON.parse($0.toJson()) }
                XCTAssertEqual(result.count, 1)
                XCTAssertTrue(result.first?["content"]?.string?.contains("vault says 42") == true, "\(step): \(result)")
                shown += events.map { $0.toJson() }
                shown.append(client.transcript().toJson())
            }
            client.shutdown()
            XCTAssertEqual(auth.urls.count, 2, "the revoked token needed a new authorization")
            await source.shutdown()
        } catch {
            await vault.kill()
            throw error
        }
        await vault.kill()
        let tokens = try auth.tokens()
        XCTAssertGreaterThanOrEqual(tokens.count, 4)
        for text in shown { for token in tokens { XCTAssertFalse(text.contains(token), "a token was shown") } }
    }

    func testABrowserStepThatThrowsFailsTheServerWithTheReason() async throws {
        final class Refusing: McpAuth, @unchecked Sendable {
            func redirectUri() -> String { "http://127.0.0.1:9/callback" }
            func authorize(server: String, url: String) async throws -> String {
                throw ContenoxError.Host(detail: "the person closed the browser")
            }
            func load(key: String) async throws -> String? { nil }
            func save(key: String, value: String) async throws { throw RunnerError("nothing to save") }
        }
        let (vault, port) = try await startVault()
        let source: McpSource
        do {
            source = try await loadMcp(configJson: vaultConfig(port), auth: Refusing())
        } catch {
            await vault.kill()
            throw error
        }
        XCTAssertTrue(source.tools().isEmpty)
        if case .failed(let error) = source.servers().first?.state {
            XCTAssertTrue(error.contains("the person closed the browser"), error)
        } else {
            XCTFail("the server did not fail: \(source.servers())")
        }
        await source.shutdown()
        await vault.kill()
    }
}
