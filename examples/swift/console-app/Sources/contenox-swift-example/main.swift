// A console app on the contenox Swift package: one agent turn on the engine's scripted model (no
// network, no key), async host tools, a gate that asks before anything not read-only, the
// question answered on the terminal, the events read as an AsyncStream while they happen.
//
//   swift run contenox-swift-example [PROMPT...]     (answer y to approve)
//
// Swap the config for {"style": "openai", "model": "...", "base_url": "..."} (the key from
// OPENAI_API_KEY) to talk to a real model; nothing else changes.

import Contenox
import Foundation

/// The scripted model's responses: look the weather up, book a hotel, answer.
let config = """
    {"style": "scripted", "builtins": [], "script": [
      {"tool_calls": [{"id": "call_1", "name": "weather", "arguments": {"city": "Lisbon"}}]},
      {"tool_calls": [{"id": "call_2", "name": "book", "arguments": {"city": "Lisbon", "nights": 2}}]},
      {"text": "Lisbon is sunny; I booked two nights."}
    ]}
    """

/// Model text made safe for a terminal: control characters (escape sequences) are replaced.
func printable(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.map { c in
        c.properties.generalCategory == .control && c != "\n" && c != "\t" ? "\u{FFFD}" : c
    }))
}

/// Read-only tools run; everything else waits for the person at the terminal.
final class AskBeforeChanges: Hooks {
    func beforeTool(call: ToolCallEvent) async throws -> Decision {
        if call.hints.readOnly == true { return .allow }
        return .ask(kind: "approval", prompt: "Allow \(call.name) \(call.argumentsJson)?", timeoutMs: nil, dataJson: nil)
    }

    func afterTool(call: ToolCallEvent, result: ToolOutput) async throws -> ToolOutput? { nil }
}

/// `y` approves; anything else, or the end of stdin, denies.
final class TerminalAnswers: WaitFor {
    func waitFor(request: PendingRequest) async throws -> Answer {
        print("\(printable(request.prompt ?? "Allow?")) [y/N] ", terminator: "")
        fflush(stdout)
        switch await readLineOnAThread()?.trimmingCharacters(in: .whitespaces) {
        case "y", "Y", "yes": return .approve
        case nil: return .deny(message: "No one is at the terminal to approve this.")
        default: return .deny(message: "The user said no.")
        }
    }
}

/// `readLine()` blocks its thread: run it on one of its own, not on the threads Swift's tasks
/// (and the engine's callbacks) share.
func readLineOnAThread() async -> String? {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: readLine()) }.start()
    }
}

/// One turn on the prompt given (or the default one); returns how it ended.
func turn(_ arguments: [String]) async throws -> Outcome? {
    let given = arguments.joined(separator: " ")
    let prompt = given.isEmpty ? "What's the weather in Lisbon? Book two nights if it's nice." : given

    let weather = hostTool(ToolSpec(
        name: "weather",
        description: "Today's weather in a city.",
        inputSchemaJson: #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#,
        hints: Hints(readOnly: true, openWorld: true),
        tier: .core
    )) { argumentsJson, _ in
        try await Task.sleep(nanoseconds: 10_000_000) // an async tool: a real one would call a service here
        return ToolOutput(content: #"{"forecast":"sunny","celsius":24,"query":\#(argumentsJson)}"#, isError: false, metadataJson: nil)
    }
    let book = hostTool(ToolSpec(
        name: "book",
        description: "Book a hotel.",
        inputSchemaJson: #"{"type":"object","properties":{"city":{"type":"string"},"nights":{"type":"integer"}}}"#,
        hints: Hints(destructive: false, openWorld: true),
        tier: .core
    )) { _, context in
        ToolOutput(content: #"{"booked":true,"ref":"\#(context.callId)"}"#, isError: false, metadataJson: nil)
    }

    let client = try Client(configJson: config, tools: [weather, book], hooks: AskBeforeChanges(), waitFor: TerminalAnswers())
    defer { client.shutdown() }
    var outcome: Outcome? = nil
    for await event in try await client.stream(prompt: prompt).events {
        switch event {
        case let .toolCall(_, name, argumentsJson, _):
            print("  > \(name) \(argumentsJson)")
        case let .toolResult(_, name, content, isError, _, _, _):
            print("  < \(name)\(isError ? " (error)" : ""): \(printable(content))")
        case let .text(text, _):
            print(printable(text))
        case let .turnEnd(ended, finalText, _, _):
            outcome = ended
            print("\(outcomeName(outcome: ended)): \(printable(finalText))")
        default:
            break
        }
    }
    return outcome
}

do {
    let outcome = try await turn(Array(CommandLine.arguments.dropFirst()))
    exit(outcome == .done ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(2)
}
