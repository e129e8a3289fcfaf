package contenox

import java.nio.file.Files
import java.nio.file.Path
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The lifecycle hooks ([LifecycleHooks], beside [Hooks]) on the scripted model: each point's
 * argument and answer, and a hook that throws or hangs past `hook_timeout_ms` falling back.
 */
@org.junit.jupiter.api.Timeout(60)
class LifecycleTest {
    private val root: Path = Files.createTempDirectory("contenox-lifecycle")

    @AfterEach
    fun cleanup() {
        root.toFile().deleteRecursively()
    }

    private fun config(vararg entries: JSONObject, extra: JSONObject = JSONObject()): String {
        val cfg = JSONObject()
            .put("style", "scripted")
            .put("script", JSONArray(entries.toList()))
            .put("builtins", JSONArray())
            .put("root", root.toString())
            .put("hook_timeout_ms", 300)
            .put("compaction", JSONObject().put("threshold_tokens", 1_000_000).put("keep_recent", 1))
        for (key in extra.keySet()) cfg.put(key, extra.get(key))
        return cfg.toString()
    }

    private fun text(t: String) = JSONObject().put("text", t)

    private val callFail = JSONObject().put(
        "tool_calls",
        JSONArray().put(JSONObject().put("id", "c1").put("name", "fail").put("arguments", JSONObject())),
    )

    private val failing = hostTool(
        ToolSpec(
            name = "fail",
            description = "Fails.",
            inputSchemaJson = """{"type":"object"}""",
            hints = Hints(),
            tier = Tier.CORE,
        ),
    ) { _, _ -> throw ContenoxException.Host("it broke") }

    /** The first message's text, as the engine's JSON has it. */
    private fun firstUserJson(result: TurnResult): String =
        JSONObject(result.transcript.toJson()).getJSONArray("messages").getJSONObject(0).get("content").toString()

    @Test
    fun `every point is called in order with its typed argument`() = runBlocking<Unit> {
        val log = java.util.Collections.synchronizedList(mutableListOf<String>())
        var stops = 0
        val lifecycle = object : LifecycleHooksBase() {
            override suspend fun onTurnStart(prompt: String) { log.add("turn_start $prompt") }
            override suspend fun onPrompt(prompt: String): PromptAction {
                log.add("prompt $prompt")
                return PromptAction.AddContext("(from the hook)")
            }
            override suspend fun onNotification(notification: Notification) {
                log.add("notification ${notification.kind}")
            }
            override suspend fun onToolError(call: ToolCallEvent, result: ToolOutput) {
                log.add("tool_error ${call.name} ${call.callId} ${result.isError} ${result.content}")
            }
            override suspend fun onStop(finalText: String): StopAction {
                log.add("stop $finalText")
                stops += 1
                return if (stops == 1) StopAction.Continue("check again") else StopAction.Stop
            }
            override suspend fun onTurnEnd(end: TurnEndInfo) { log.add("turn_end ${end.outcome} ${end.finalText}") }
        }
        val gate = object : Hooks {
            override suspend fun beforeTool(call: ToolCallEvent): Decision = Decision.Ask("approval", "run?", null, null)
            override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? = null
        }
        val approve = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer = Answer.Approve
        }
        Client(
            config(callFail, text("first answer"), text("second answer")),
            listOf(failing),
            hooks = gate,
            waitFor = approve,
            lifecycle = lifecycle,
        ).use { client ->
            val r = client.run("hello")
            assertEquals(Outcome.DONE, r.outcome)
            assertEquals("second answer", r.finalText)
            assertEquals(
                listOf(
                    "turn_start hello",
                    "prompt hello",
                    "notification ASK",
                    "tool_error fail c1 true it broke",
                    "stop first answer",
                    "stop second answer",
                    "turn_end DONE second answer",
                ),
                log.toList(),
            )
            val first = firstUserJson(r)
            assertTrue(first.contains("hello") && first.contains("(from the hook)"), first)
            assertTrue(r.transcript.toJson().contains("check again"))
        }
    }

    @Test
    fun `onPrompt replaces or refuses, onStop is bounded by max_turns`() = runBlocking<Unit> {
        val replace = object : LifecycleHooksBase() {
            override suspend fun onPrompt(prompt: String) = PromptAction.Replace("tidy")
        }
        Client(config(text("ok")), lifecycle = replace).use { client ->
            val first = firstUserJson(client.run("messy"))
            assertTrue(first.contains("tidy") && !first.contains("messy"), first)
        }
        val refuse = object : LifecycleHooksBase() {
            override suspend fun onPrompt(prompt: String) = PromptAction.Refuse("not that")
        }
        Client(config(text("never")), lifecycle = refuse).use { client ->
            val r = client.run("bad")
            assertEquals(Outcome.ERROR, r.outcome)
            assertEquals("the prompt was refused by a hook: not that", r.error)
            assertEquals(0UL, r.transcript.len())
        }
        val seen = mutableListOf<String>()
        val always = object : LifecycleHooksBase() {
            override suspend fun onStop(finalText: String): StopAction {
                seen.add(finalText)
                return StopAction.Continue("again")
            }
        }
        Client(config(text("one"), text("two"), text("three"), extra = JSONObject().put("max_turns", 2)), lifecycle = always)
            .use { client ->
                val r = client.run("go")
                assertEquals(Outcome.DONE, r.outcome)
                assertEquals("two", r.finalText)
                assertEquals(listOf("one"), seen)
            }
    }

    @Test
    fun `beforeCompact vetoes or sets the instructions`() = runBlocking<Unit> {
        val requests = mutableListOf<CompactRequest>()
        val veto = object : LifecycleHooksBase() {
            override suspend fun beforeCompact(request: CompactRequest): CompactAction {
                requests.add(request)
                return CompactAction.Veto("not now")
            }
        }
        Client(config(text("a"), text("b")), lifecycle = veto).use { client ->
            client.run("one")
            client.run("two")
            assertNull(client.compact())
            assertEquals(4UL, client.transcript().len())
            assertEquals(CompactTrigger.MANUAL, requests.single().trigger)
            assertTrue(requests.single().preTokens > 0UL)
        }
        val instruct = object : LifecycleHooksBase() {
            override suspend fun beforeCompact(request: CompactRequest) = CompactAction.Instructions("keep names")
        }
        Client(config(text("a"), text("b"), text("the summary")), lifecycle = instruct).use { client ->
            client.run("one")
            client.run("two")
            assertEquals("the summary", requireNotNull(client.compact()).summary)
        }
    }

    @Test
    fun `a hook that throws or hangs falls back and the turn goes on`() = runBlocking<Unit> {
        for (hang in listOf(false, true)) {
            suspend fun fail(): Nothing = if (hang) awaitCancellation() else throw IllegalStateException("hook bug")
            val broken = object : LifecycleHooks {
                override suspend fun onPrompt(prompt: String): PromptAction = fail()
                override suspend fun onStop(finalText: String): StopAction = fail()
                override suspend fun beforeCompact(request: CompactRequest): CompactAction = fail()
                override suspend fun onToolError(call: ToolCallEvent, result: ToolOutput) = fail()
                override suspend fun onTurnStart(prompt: String) = fail()
                override suspend fun onTurnEnd(end: TurnEndInfo) = fail()
                override suspend fun onNotification(notification: Notification) = fail()
            }
            Client(
                config(callFail, text("done"), text("second"), text("the summary")),
                listOf(failing),
                lifecycle = broken,
            ).use { client ->
                val r = client.run("as it is")
                assertEquals(Outcome.DONE, r.outcome, "hang=$hang")
                assertEquals("done", r.finalText)
                assertTrue(firstUserJson(r).contains("as it is"))
                client.run("more")
                assertEquals("the summary", requireNotNull(client.compact()).summary)
            }
        }
    }

    @Test
    fun `hook_timeout_ms 0 is a configuration error`() {
        assertThrows<ContenoxException> { Client(config(text("x"), extra = JSONObject().put("hook_timeout_ms", 0))) }
    }
}
