// A console app on the contenox Kotlin package: one agent turn on the engine's scripted model (no
// network, no key), a suspend host tool, a gate that asks before anything not read-only, the
// question answered on the terminal, the events collected as a Flow while they happen.
//
//   java -jar target/contenox-kotlin-example-0.1.0.jar [PROMPT...]     (answer y to approve)
//
// Swap the config for {"style": "openai", "model": "...", "base_url": "..."} (the key from
// OPENAI_API_KEY) to talk to a real model; nothing else changes.
package example

import contenox.Answer
import contenox.Client
import contenox.Decision
import contenox.Event
import contenox.Hints
import contenox.Hooks
import contenox.Outcome
import contenox.PendingRequest
import contenox.Tier
import contenox.ToolCallEvent
import contenox.ToolOutput
import contenox.ToolSpec
import contenox.WaitFor
import contenox.hostTool
import contenox.streamFlow
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlin.system.exitProcess

/** The scripted model's responses: look the weather up, book a hotel, answer. */
private val CONFIG = """
    {"style": "scripted", "builtins": [], "script": [
      {"tool_calls": [{"id": "call_1", "name": "weather", "arguments": {"city": "Lisbon"}}]},
      {"tool_calls": [{"id": "call_2", "name": "book", "arguments": {"city": "Lisbon", "nights": 2}}]},
      {"text": "Lisbon is sunny; I booked two nights."}
    ]}
""".trimIndent()

/** Model text made safe for a terminal: control characters (escape sequences) are replaced. */
fun printable(text: String): String =
    text.map { c -> if (c.isISOControl() && c != '\n' && c != '\t') '\uFFFD' else c }.joinToString("")

/** Read-only tools run; everything else waits for the person at the terminal. */
object AskBeforeChanges : Hooks {
    override suspend fun beforeTool(call: ToolCallEvent): Decision =
        if (call.hints.readOnly == true) {
            Decision.Allow
        } else {
            Decision.Ask("approval", "Allow ${call.name} ${call.argumentsJson}?", null, null)
        }

    override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? = null
}

/** `y` approves; anything else, or the end of stdin, denies. */
object TerminalAnswers : WaitFor {
    override suspend fun waitFor(request: PendingRequest): Answer {
        print("${printable(request.prompt ?: "Allow?")} [y/N] ")
        System.out.flush()
        val line = withContext(Dispatchers.IO) { readlnOrNull() }
        return when (line?.trim()) {
            "y", "Y", "yes" -> Answer.Approve
            null -> Answer.Deny("No one is at the terminal to approve this.")
            else -> Answer.Deny("The user said no.")
        }
    }
}

fun main(args: Array<String>) {
    val outcome = runBlocking { turn(args) }
    exitProcess(if (outcome == Outcome.DONE) 0 else 1)
}

/** One turn on the prompt given (or the default one); returns how it ended. */
suspend fun turn(args: Array<String>): Outcome? {
    val prompt = args.joinToString(" ").ifBlank { "What's the weather in Lisbon? Book two nights if it's nice." }

    val weather = hostTool(
        ToolSpec(
            name = "weather",
            description = "Today's weather in a city.",
            inputSchemaJson = """{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}""",
            hints = Hints(readOnly = true, openWorld = true),
            tier = Tier.CORE,
        ),
    ) { argumentsJson, _ ->
        delay(10) // a suspend tool: a real one would call a service here
        ToolOutput(content = """{"forecast":"sunny","celsius":24,"query":$argumentsJson}""", isError = false, metadataJson = null)
    }
    val book = hostTool(
        ToolSpec(
            name = "book",
            description = "Book a hotel.",
            inputSchemaJson = """{"type":"object","properties":{"city":{"type":"string"},"nights":{"type":"integer"}}}""",
            hints = Hints(destructive = false, openWorld = true),
            tier = Tier.CORE,
        ),
    ) { _, context ->
        ToolOutput(content = """{"booked":true,"ref":"${context.callId}"}""", isError = false, metadataJson = null)
    }

    return Client(configJson = CONFIG, tools = listOf(weather, book), hooks = AskBeforeChanges, waitFor = TerminalAnswers).use { client ->
        var outcome: Outcome? = null
        client.streamFlow(prompt).collect { event ->
            when (event) {
                is Event.ToolCall -> println("  > ${event.name} ${event.argumentsJson}")
                is Event.ToolResult -> println("  < ${event.name}${if (event.isError) " (error)" else ""}: ${printable(event.content)}")
                is Event.Text -> println(printable(event.text))
                is Event.TurnEnd -> {
                    outcome = event.outcome
                    println("${event.outcome.name.lowercase()}: ${printable(event.finalText)}")
                }
                else -> {}
            }
        }
        outcome
    }
}
