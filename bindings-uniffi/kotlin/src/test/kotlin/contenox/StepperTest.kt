package contenox

import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * A turn stepped by its host from Kotlin (`client.step`): driven by hand it ends as `run` does;
 * replaying the recorded results against the openai-style fake server sends no request and
 * runs no tool; results that do not fit throw `ContenoxException.Step` and change nothing.
 */
@org.junit.jupiter.api.Timeout(60)
class StepperTest {
    private val root: Path = Files.createTempDirectory("contenox-kt-step")
    private val repo = File(System.getProperty("contenox.repo") ?: "../..").canonicalFile
    private val fakeServer = System.getenv("FAKE_MODEL_SERVER") ?: File(repo, "target/debug/fake-model-server").path

    @AfterEach
    fun cleanup() {
        root.toFile().deleteRecursively()
    }

    private fun call(id: String, name: String, n: Int) =
        JSONObject().put("id", id).put("name", name).put("arguments", JSONObject().put("n", n))

    /** read c0 and write c1 in one reply, then the answer. */
    private val script = JSONArray()
        .put(JSONObject().put("tool_calls", JSONArray().put(call("c0", "read", 0)).put(call("c1", "write", 1))))
        .put(JSONObject().put("text", "all done"))

    /** What the host code was asked to do. */
    private class Counts {
        val reads = AtomicInteger()
        val writes = AtomicInteger()
        val asks = AtomicInteger()
        fun all() = Triple(reads.get(), writes.get(), asks.get())
    }

    private fun spec(name: String) = ToolSpec(name, "test tool $name", """{"type":"object"}""", Hints(), Tier.CORE)

    /** `write` asks (a policy), `read` does not; `extra` adds config keys (the model). */
    private fun client(counts: Counts, extra: JSONObject = JSONObject()): Client {
        val read = hostTool(spec("read")) { args, ctx ->
            counts.reads.incrementAndGet()
            ToolOutput("read ${JSONObject(args).getInt("n")} as ${ctx.idempotencyKey}", false, null)
        }
        val write = hostTool(spec("write")) { args, ctx ->
            counts.writes.incrementAndGet()
            ToolOutput("wrote ${JSONObject(args).getInt("n")} as ${ctx.idempotencyKey}", false, null)
        }
        val waitFor = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer {
                counts.asks.incrementAndGet()
                return Answer.Approve
            }
        }
        val policy = JSONObject().put("default_action", "allow").put(
            "rules",
            JSONArray().put(JSONObject().put("tool", "write").put("action", "approve").put("timeout_s", 600)),
        )
        val cfg = JSONObject()
            .put("style", "scripted")
            .put("script", script)
            .put("builtins", JSONArray())
            .put("root", root.toString())
            .put("policy", policy)
        for (key in extra.keySet()) cfg.put(key, extra.get(key))
        if (cfg.getString("style") != "scripted") cfg.remove("script")
        return Client(cfg.toString(), listOf(read, write), null, waitFor)
    }

    /** Answer each ask by feeding approve, perform the rest; the actions in order. */
    private suspend fun drive(stepper: Stepper): List<Action> {
        val actions = mutableListOf<Action>()
        repeat(50) {
            val action = stepper.next()
            actions += action
            when (action) {
                is Action.Done -> return actions
                is Action.Ask -> stepper.feed(ActionResult.Answer(action.request.callId, Answer.Approve))
                else -> stepper.perform()
            }
        }
        fail<Unit>("the stepped turn did not end in 50 actions")
        return actions
    }

    private fun kinds(actions: List<Action>) = actions.map {
        when (it) {
            is Action.ModelRequest -> "model_request"
            is Action.SummaryRequest -> "summary_request"
            is Action.ToolCall -> "tool_call"
            is Action.Ask -> "ask"
            is Action.Done -> "done"
        }
    }

    /** A transcript's JSON with every turn id replaced (each turn draws its own). */
    private fun withoutTurnIds(json: String) = json.replace(Regex("turn_[0-9a-f]{32}"), "turn_X")

    @Test
    fun `a turn stepped by hand ends as run does`() = runBlocking<Unit> {
        val ran = Counts()
        val expected = client(ran).use { it.run("go") }
        assertEquals(Triple(1, 1, 1), ran.all())

        val counts = Counts()
        client(counts).use { c ->
            c.step("go").use { stepper ->
                val actions = drive(stepper)
                assertEquals(listOf("model_request", "tool_call", "ask", "tool_call", "model_request", "done"), kinds(actions))
                // The ask was fed, not asked of waitFor; each tool ran once.
                assertEquals(Triple(1, 1, 0), counts.all())
                val result = (actions.last() as Action.Done).result
                assertEquals(expected.outcome, result.outcome)
                assertEquals(expected.finalText, result.finalText)
                assertEquals(expected.usage, result.usage)
                assertEquals(withoutTurnIds(expected.transcript.toJson()), withoutTurnIds(result.transcript.toJson()))
                val turnId = stepper.turnId()
                assertTrue(Regex("turn_[0-9a-f]{32}").matches(turnId), turnId)
                val write = actions[3] as Action.ToolCall
                assertEquals("write", write.call.name)
                assertEquals("c1", write.call.id)
                assertEquals(JSONObject().put("n", 1).toString(), JSONObject(write.call.argumentsJson).toString())
                assertEquals("$turnId:c1", write.idempotencyKey)
                assertTrue(result.transcript.toJson().contains("wrote 1 as $turnId:c1"))
                assertEquals(turnId, stepper.options().turnId)
                val events = stepper.events()
                assertTrue(events.first() is Event.TurnStart, events.toString())
                assertTrue(events.last() is Event.TurnEnd, events.toString())
                assertTrue(events.any { it is Event.Gate }, events.toString())
            }
        }
    }

    @Test
    fun `replaying the journal gives the same actions and does no IO`() = runBlocking<Unit> {
        val scenario = JSONObject().put("name", "step").put("style", "openai").put("model", script)
            .put("prompt", "go").put("expect", JSONObject())
        val file = root.resolve("scenario.json").toFile()
        file.writeText(scenario.toString())
        val server = FakeServer.start(fakeServer, file)
        try {
            val model = JSONObject().put("style", "openai").put("base_url", server.baseUrl("openai"))
                .put("model", "fake").put("api_key", "sk-STEP-SECRET-KEY-0001")
                .put("headers", JSONObject().put("X-Secret", "STEP-HEADER-0002"))
            val first = Counts()
            val (actions, journal, options) = client(first, model).use { c ->
                c.step("go").use { stepper ->
                    val actions = drive(stepper)
                    Triple(actions, stepper.journal(), stepper.options())
                }
            }
            assertEquals(Triple(1, 1, 0), first.all())
            assertEquals(2, JSONArray(server.requests()).length())
            assertEquals(
                listOf("model_response", "tool_result", "answer", "tool_result", "model_response"),
                journal.map { JSONObject(it.toJson()).getString("kind") },
            )
            // The request bodies are the wire's, without the key or headers.
            val body = JSONObject((actions[0] as Action.ModelRequest).requestJson)
            assertEquals("fake", body.getString("model"))
            val messages = body.getJSONArray("messages")
            assertEquals("go", messages.getJSONObject(messages.length() - 1).getString("content"))
            for (a in actions.dropLast(1)) {
                assertFalse(a.toString().contains("sk-STEP-SECRET-KEY-0001"), a.toString())
                assertFalse(a.toString().contains("STEP-HEADER-0002"), a.toString())
            }

            // Another process would do this: the results stored as JSON, read back, fed to a
            // turn with the same start.
            val stored = journal.map { it.toJson() }
            val again = Counts()
            client(again, model).use { c ->
                c.step("go", options).use { replay ->
                    val replayed = stored.map { json ->
                        val action = replay.next()
                        replay.feed(actionResultFromJson(json))
                        action
                    }
                    val done = replay.next() as Action.Done
                    assertEquals(actions.dropLast(1), replayed)
                    assertEquals("all done", done.result.finalText)
                    assertEquals(Outcome.DONE, done.result.outcome)
                    assertEquals(journal, replay.journal())
                }
            }
            assertEquals(Triple(0, 0, 0), again.all(), "the replay ran no tool and asked nobody")
            assertEquals(2, JSONArray(server.requests()).length(), "the replay sent no request")
        } finally {
            server.stop()
        }
    }

    @Test
    fun `results that do not fit throw Step and change nothing`() = runBlocking<Unit> {
        val counts = Counts()
        client(counts).use { c ->
            c.step("go").use { stepper ->
                fun refused(contains: String, feed: () -> Unit) {
                    val e = assertThrows<ContenoxException.Step> { feed() }
                    assertTrue(e.detail.contains(contains), "'${e.detail}' lacks '$contains'")
                }
                refused("call next() first") {
                    stepper.feed(ActionResult.ToolResult("c0", ToolOutput("x", false, null)))
                }
                val first = stepper.next()
                assertTrue(first is Action.ModelRequest && first.step == 0u, first.toString())
                assertEquals(first, stepper.next(), "asking twice gives the same action")
                refused("a ask result does not answer it") {
                    stepper.feed(ActionResult.Answer("c0", Answer.Approve))
                }
                refused("step 0") { stepper.feed(ActionResult.ModelResponse(3u, """{"text":"x"}""", null)) }
                refused("a summary_request result does not answer it") {
                    stepper.feed(ActionResult.ModelResponse(0u, """{"text":"x"}""", null, summary = true))
                }
                refused("either a reply or an error") { stepper.feed(ActionResult.ModelResponse(0u, null, null)) }
                refused("not an action result") { stepper.feed(ActionResult.ModelResponse(0u, "not json", null)) }
                refused("not an action result") { actionResultFromJson("""{"kind":"nonsense"}""") }
                refused("not an action result") { actionResultFromJson("{") }

                val recorded = stepper.perform() as ActionResult.ModelResponse
                assertEquals(0u, recorded.step)
                assertTrue(JSONObject(recorded.replyJson!!).getJSONArray("calls").length() == 2, recorded.toString())
                val read = stepper.next() as Action.ToolCall
                assertEquals("read", read.call.name)
                stepper.feed(ActionResult.ToolResult("c0", ToolOutput("fed", false, null)))
                refused("call next() first") {
                    stepper.feed(ActionResult.ToolResult("c0", ToolOutput("again", false, null)))
                }
                val ask = stepper.next() as Action.Ask
                assertEquals("c1", ask.request.callId)
                assertEquals("write", ask.request.name)
                refused("another ask than the one waiting (call c1)") {
                    stepper.feed(ActionResult.Answer("c9", Answer.Approve))
                }
                stepper.feed(ActionResult.Answer("c1", Answer.Deny("no")))
                var action: Action = stepper.next()
                repeat(10) {
                    if (action is Action.Done) return@repeat
                    stepper.perform()
                    action = stepper.next()
                }
                val result = (action as Action.Done).result
                assertEquals(Outcome.DONE, result.outcome)
                assertEquals("all done", result.finalText)
                // Nothing was lost: the fed result and the denial are the calls' results.
                val tools = result.transcript.messages().filterIsInstance<Message.Tool>()
                assertEquals(listOf("c0", "c1"), tools.map { it.callId })
                assertEquals("fed", tools[0].text)
                assertTrue(tools[1].isError && tools[1].text.contains("no"), tools[1].toString())
                refused("the turn is done") {
                    stepper.feed(ActionResult.ToolResult("c1", ToolOutput("x", false, null)))
                }
                val e = assertThrows<ContenoxException.Step> { runBlocking { stepper.perform() } }
                assertTrue(e.detail.contains("the turn is done"), e.detail)
                assertTrue(stepper.next() is Action.Done)
            }
        }
        assertEquals(Triple(0, 0, 0), counts.all())
    }

    @Test
    fun `cancel ends a stepped turn as cancelled`() = runBlocking<Unit> {
        val counts = Counts()
        client(counts).use { c ->
            c.step("go").use { stepper ->
                assertTrue(stepper.next() is Action.ModelRequest)
                stepper.cancel()
                var action = stepper.next()
                repeat(10) {
                    if (action is Action.Done) return@repeat
                    runCatching { stepper.perform() }
                    action = stepper.next()
                }
                assertEquals(Outcome.CANCELLED, (action as Action.Done).result.outcome)
            }
        }
        assertEquals(Triple(0, 0, 0), counts.all())
    }
}
