package contenox

import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The Kotlin API itself, on the engine's scripted model (no network): suspend host tools,
 * throwing callbacks, coroutine cancellation, events as a Flow, transcripts, errors.
 */
@org.junit.jupiter.api.Timeout(60)
class BindingTest {
    private val root: Path = Files.createTempDirectory("contenox-kt")

    companion object {
        /** Exceptions that escaped a JNA callback (the generated code must never let one out). */
        val escaped = java.util.concurrent.ConcurrentLinkedQueue<Throwable>()

        @JvmStatic
        @org.junit.jupiter.api.BeforeAll
        fun watchCallbacks() {
            com.sun.jna.Native.setCallbackExceptionHandler { _, e ->
                e.printStackTrace()
                escaped.add(e)
            }
        }
    }

    @AfterEach
    fun cleanup() {
        root.toFile().deleteRecursively()
        assertTrue(escaped.isEmpty(), "exceptions escaped JNA callbacks: ${escaped.toList()}")
    }

    /** A scripted-style config: `entries` are the model's responses, in order. */
    private fun config(vararg entries: JSONObject, extra: JSONObject = JSONObject()): String {
        val cfg = JSONObject()
            .put("style", "scripted")
            .put("script", JSONArray(entries.toList()))
            .put("builtins", JSONArray())
            .put("root", root.toString())
        for (key in extra.keySet()) cfg.put(key, extra.get(key))
        return cfg.toString()
    }

    private fun call(id: String, name: String, args: JSONObject = JSONObject()) =
        JSONObject().put("id", id).put("name", name).put("arguments", args)

    private fun calls(vararg c: JSONObject) = JSONObject().put("tool_calls", JSONArray(c.toList()))

    private fun text(t: String) = JSONObject().put("text", t)

    private fun spec(name: String) = ToolSpec(
        name = name,
        description = "test tool $name",
        inputSchemaJson = """{"type":"object"}""",
        hints = Hints(),
        tier = Tier.CORE,
    )

    private fun results(events: List<Event>) = events.filterIsInstance<Event.ToolResult>()

    private suspend fun collect(client: Client, prompt: String): Pair<List<Event>, TurnResult> {
        val run = client.stream(prompt)
        val events = run.events().toList()
        return events to run.result()
    }

    @Test
    fun `a suspend host tool runs and its result reaches the model`() = runBlocking {
        val seen = CompletableDeferred<Pair<String, String>>()
        var kept: ToolReporter? = null
        val slow = hostTool(spec("slow")) { args, ctx ->
            delay(20)
            val fromIo = withContext(Dispatchers.IO) { "io:" + JSONObject(args).getInt("n") }
            assertTrue(ctx.reporter.progress("""{"step":1}"""))
            kept = ctx.reporter // kept beyond the call: must not hold the turn open
            assertEquals(root.toRealPath().toString(), ctx.root)
            seen.complete(ctx.callId to ctx.name)
            ToolOutput(content = fromIo, isError = false, metadataJson = """{"total":1}""")
        }
        val client = Client(
            config(calls(call("c1", "slow", JSONObject().put("n", 7))), text("done")),
            listOf(slow),
        )
        client.use {
            val (events, result) = collect(client, "go")
            assertEquals(Outcome.DONE, result.outcome)
            assertEquals("done", result.finalText)
            assertEquals("c1" to "slow", seen.await())
            val r = results(events).single()
            // the model sees the content, then the metadata on a line of its own
            assertEquals("io:7\n\n[metadata: {\"total\":1}]", r.content)
            assertFalse(r.isError)
            assertEquals("""{"total":1}""", r.metadataJson)
            val progress = events.filterIsInstance<Event.Progress>().single()
            assertEquals("""{"step":1}""", progress.dataJson)
            val tool = result.transcript.messages().filterIsInstance<Message.Tool>().single()
            assertTrue(textOf(tool.content).startsWith("io:7"), textOf(tool.content))
            assertFalse(kept!!.progress("{}"), "a report after the call ended is dropped")
        }
    }

    @Test
    fun `throwing callbacks become error results, not crashes`() = runBlocking {
        val boom = hostTool(spec("boom")) { args, _ ->
            error(JSONObject(args).getString("message"))
        }
        val typed = hostTool(spec("typed")) { _, _ -> throw ContenoxException.Host("exactly this") }
        val gated = hostTool(spec("gated")) { _, _ -> ToolOutput("never runs", false, null) }
        val asked = hostTool(spec("asked")) { _, _ -> ToolOutput("never runs either", false, null) }
        val hooks = object : Hooks {
            override suspend fun beforeTool(call: ToolCallEvent): Decision = when (call.name) {
                "gated" -> throw IllegalArgumentException("hook exploded")
                "asked" -> Decision.Ask("approval", "ok?", null, null)
                else -> Decision.Allow
            }

            override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? = null
        }
        val waitFor = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer {
                throw RuntimeException("nobody home for ${request.name}")
            }
        }
        val client = Client(
            config(
                calls(
                    call("c1", "boom", JSONObject().put("message", "disk on fire")),
                    call("c2", "typed"),
                    call("c3", "gated"),
                    call("c4", "asked"),
                ),
                text("survived"),
            ),
            listOf(boom, typed, gated, asked),
            hooks,
            waitFor,
        )
        client.use {
            val (events, result) = collect(client, "go")
            assertEquals(Outcome.DONE, result.outcome)
            assertEquals("survived", result.finalText)
            val byId = results(events).associateBy { it.callId }
            assertTrue(byId.values.all { it.isError }, byId.toString())
            assertTrue(byId.getValue("c1").content.contains("disk on fire"), byId.toString())
            assertEquals("exactly this", byId.getValue("c2").content)
            assertTrue(byId.getValue("c3").content.contains("hook exploded"), byId.toString())
            assertTrue(byId.getValue("c4").content.contains("nobody home for asked"), byId.toString())
        }
    }

    @Test
    fun `a turn suspended at an ask resumes in another client, its tool run once`() = runBlocking {
        val runs = AtomicInteger(0)
        val write = hostTool(spec("write")) { _, _ ->
            runs.incrementAndGet()
            ToolOutput("wrote", false, null)
        }
        val policy = JSONObject().put(
            "policy",
            JSONObject().put("default_action", "allow").put(
                "rules",
                JSONArray().put(JSONObject().put("tool", "write").put("action", "approve").put("timeout_s", 600)),
            ),
        )
        fun answering(answer: Answer) = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer = answer
        }
        val a = Client(
            config(calls(call("c1", "write", JSONObject().put("path", "a"))), extra = policy),
            listOf(write), null, answering(Answer.Suspend),
        )
        val first = a.use { it.run("go") }
        assertEquals(Outcome.SUSPENDED, first.outcome)
        assertEquals(0, runs.get())
        val pending = first.pending.single()
        assertEquals("c1", pending.callId)
        assertTrue(pending.deadlineMs!!.toLong() > System.currentTimeMillis())
        val checkpoint = first.checkpoint!!

        val b = Client(
            config(text("done"), extra = policy),
            listOf(write), null, answering(Answer.Deny("the host was asked again")),
        )
        b.use {
            val wrong = assertThrows<ContenoxException.Checkpoint> {
                runBlocking { b.resume(checkpoint, mapOf("nope" to Answer.Approve)) }
            }
            assertTrue(wrong.toString().contains("no call nope"), wrong.toString())
            val newer = JSONObject(checkpoint).let { it.put("version", it.getInt("version") + 1) }.toString()
            assertThrows<ContenoxException.Checkpoint> { runBlocking { b.resume(newer, mapOf()) } }
            val run = b.resumeStream(checkpoint, mapOf("c1" to Answer.Approve))
            val events = run.events().toList()
            val done = run.result()
            assertEquals(Outcome.DONE, done.outcome)
            assertEquals("done", done.finalText)
            assertEquals(1, runs.get())
            assertTrue(events.any { it is Event.Answer }, events.toString())
            assertThrows<ContenoxException.Checkpoint> {
                runBlocking { b.resume(checkpoint, mapOf("c1" to Answer.Approve)) }
            }
            assertEquals(1, runs.get())
        }
    }

    @Test
    fun `the idempotency key is turnId-callId, the same in every client that resumes the call`() = runBlocking {
        val keys = java.util.Collections.synchronizedList(mutableListOf<String>())
        val write = hostTool(spec("write")) { _, ctx ->
            keys.add(ctx.idempotencyKey)
            ToolOutput("wrote", false, null)
        }
        val policy = JSONObject().put(
            "policy",
            JSONObject().put("default_action", "allow").put(
                "rules",
                JSONArray().put(JSONObject().put("tool", "write").put("action", "approve").put("timeout_s", 600)),
            ),
        )
        fun answering(answer: Answer) = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer = answer
        }
        val checkpoint = Client(
            config(calls(call("c1", "write", JSONObject().put("path", "a"))), extra = policy),
            listOf(write), null, answering(Answer.Suspend),
        ).use { it.run("go") }.checkpoint!!
        val turnId = JSONObject(checkpoint).getString("turn_id")
        assertTrue(Regex("turn_[0-9a-f]{32}").matches(turnId), turnId)
        // Two clients resume the same checkpoint (a worker that crashed while the tool ran, and
        // the one that took over): the tool gets the same key both times.
        repeat(2) {
            Client(config(text("done"), extra = policy), listOf(write), null, answering(Answer.Approve)).use {
                assertEquals(Outcome.DONE, it.resume(checkpoint, mapOf("c1" to Answer.Approve)).outcome)
            }
        }
        assertEquals(listOf("$turnId:c1", "$turnId:c1"), keys.toList())
    }

    @Test
    fun `a tool whose spec is invalid is refused with a ContenoxException`() {
        val bad = hostTool(spec("has space")) { _, _ -> ToolOutput("x", false, null) }
        val e = assertThrows<ContenoxException> { Client(config(text("hi")), listOf(bad)) }
        assertTrue(e is ContenoxException.Tool, e.toString())
        val badSchema = hostTool(spec("ok").copy(inputSchemaJson = "{not json")) { _, _ ->
            ToolOutput("x", false, null)
        }
        assertThrows<ContenoxException.Json> { Client(config(text("hi")), listOf(badSchema)) }
    }

    @Test
    fun `cancelling the coroutine awaiting run cancels the turn and the pending waitFor`() = runBlocking {
        val waiting = CompletableDeferred<PendingRequest>()
        val waitSawCancel = CompletableDeferred<Boolean>()
        val waitFor = object : WaitFor {
            override suspend fun waitFor(request: PendingRequest): Answer {
                waiting.complete(request)
                try {
                    awaitCancellation()
                } catch (e: CancellationException) {
                    waitSawCancel.complete(true)
                    throw e
                }
            }
        }
        val hooks = object : Hooks {
            override suspend fun beforeTool(call: ToolCallEvent) =
                Decision.Ask("approval", "Run ${call.name}?", null, """{"why":"test"}""")

            override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? = null
        }
        val echo = hostTool(spec("echo")) { args, _ -> ToolOutput(args, false, null) }
        val client = Client(
            config(calls(call("c1", "echo", JSONObject().put("x", 1))), text("second answer")),
            listOf(echo),
            hooks,
            waitFor,
        )
        client.use {
            val job = launch(Dispatchers.Default) { client.run("ask me") }
            val request = withTimeout(10_000) { waiting.await() }
            assertEquals("echo", request.name)
            assertEquals("c1", request.callId)
            assertEquals("""{"why":"test"}""", request.dataJson)
            assertEquals("""{"x":1}""", request.argumentsJson)
            job.cancelAndJoin()
            assertTrue(withTimeout(10_000) { waitSawCancel.await() })
            // The cancelled turn ended properly: the next turn queues behind it and the
            // transcript holds the `cancelled` result of the call.
            val next = withTimeout(10_000) { client.run("again") }
            assertEquals(Outcome.DONE, next.outcome)
            val messages = next.transcript.messages()
            val tool = messages.filterIsInstance<Message.Tool>().single()
            assertEquals("c1", tool.callId)
            assertTrue(tool.isError)
            assertEquals("cancelled", textOf(tool.content))
            // the second turn got the model's next entry
            assertEquals("second answer", next.finalText)
        }
    }

    @Test
    fun `Run cancel and Client cancel end a stalled turn as cancelled`() = runBlocking {
        val stall = JSONObject().put("stall", true)
        val client = Client(config(stall, stall))
        client.use {
            val run = client.stream("first")
            run.events().takeWhile { it !is Event.Request }.toList()
            run.cancel()
            assertEquals(Outcome.CANCELLED, withTimeout(10_000) { run.result() }.outcome)
            assertTrue(run.isFinished())

            val second = async(Dispatchers.Default) { client.run("second") }
            delay(100)
            client.cancel()
            assertEquals(Outcome.CANCELLED, withTimeout(10_000) { second.await() }.outcome)
            assertFalse(client.isClosed())
        }
    }

    @Test
    fun `events are collected as a Flow, in order, with the engine's JSON`() = runBlocking {
        val echo = hostTool(spec("echo")) { args, _ -> ToolOutput(args, false, null) }
        val client = Client(
            config(calls(call("c1", "echo", JSONObject().put("a", "b"))), text("all done now")),
            listOf(echo),
        )
        client.use {
            val events = client.streamFlow("hello").toList()
            assertTrue(events.first() is Event.TurnStart)
            val end = events.last() as Event.TurnEnd
            assertEquals(Outcome.DONE, end.outcome)
            assertEquals("all done now", end.finalText)
            val kinds = events.map { it.kind() }
            val expected = listOf("turn_start", "tool_call", "gate", "tool_start", "tool_result", "text", "turn_end")
            var at = 0
            for (k in kinds) if (at < expected.size && k == expected[at]) at++
            assertEquals(expected.size, at, kinds.toString())
            assertTrue(kinds.count { it == "text_delta" } >= 1, kinds.toString())

            val toolCall = events.filterIsInstance<Event.ToolCall>().single()
            assertEquals("""{"a":"b"}""", toolCall.argumentsJson)
            assertEquals("echo", toolCall.toolName())
            val json = JSONObject(toolCall.toJson())
            assertEquals("tool_call", json.getString("type"))
            assertEquals("c1", json.getString("call_id"))
            assertEquals("b", json.getJSONObject("arguments").getString("a"))
            val gate = JSONObject(events.first { it is Event.Gate }.toJson())
            assertEquals("allow", gate.getString("decision"))
            assertEquals("host", gate.getString("source"))
            assertEquals("done", JSONObject(end.toJson()).getString("outcome"))
            assertEquals("done", outcomeName(end.outcome))
        }
    }

    @Test
    fun `a collector that stops early cancels the turn of streamFlow`() = runBlocking {
        val stall = JSONObject().put("stall", true)
        val client = Client(config(stall, text("next")))
        client.use {
            val seen = client.streamFlow("stall").takeWhile { it !is Event.Request }.toList()
            assertTrue(seen.first() is Event.TurnStart)
            // The stalled turn was cancelled when the collector stopped: the next one runs.
            val next = withTimeout(10_000) { client.run("next") }
            assertEquals(Outcome.DONE, next.outcome)
            assertEquals("next", next.finalText)
        }
    }

    @Test
    fun `a suspend web search provider backs the websearch builtin`() = runBlocking {
        val asked = CompletableDeferred<SearchRequest>()
        val provider = object : WebSearchProvider {
            override suspend fun search(request: SearchRequest): List<SearchResult> {
                asked.complete(request)
                delay(10)
                return listOf(
                    SearchResult("Kept", "https://kept.example/page", "a snippet"),
                    SearchResult("Blocked", "https://blocked.example/x", "dropped by the engine"),
                )
            }
        }
        val args = JSONObject().put("query", "kotlin").put("blocked_domains", JSONArray(listOf("blocked.example")))
        val client = Client(
            config(calls(call("c1", "websearch", args)), text("found"), extra = JSONObject().put("builtins", JSONArray(listOf("websearch")))),
            websearch = provider,
        )
        client.use {
            val (events, result) = collect(client, "search")
            assertEquals("found", result.finalText)
            assertEquals("kotlin", asked.await().query)
            val r = results(events).single()
            assertFalse(r.isError, r.content)
            assertTrue(r.content.contains("https://kept.example/page"), r.content)
            assertFalse(r.content.contains("blocked.example"), r.content)
        }
    }

    @Test
    fun `an image read by read reaches the model and survives an afterTool copy`() = runBlocking<Unit> {
        // A GIF named .png: read knows it by its bytes.
        val gif = byteArrayOf(
            0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 0, 0x3b,
        )
        Files.write(root.resolve("shot.png"), gif)
        var seen: String? = null
        val hooks = object : Hooks {
            override suspend fun beforeTool(call: ToolCallEvent): Decision = Decision.Allow
            override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? {
                seen = result.imagesJson
                return result.copy(metadataJson = """{"seen":true}""")
            }
        }
        val cfg = config(
            calls(call("c1", "read", JSONObject().put("path", "shot.png"))),
            text("a pixel"),
            extra = JSONObject().put("builtins", JSONArray(listOf("read"))),
        )
        Client(cfg, emptyList(), hooks).use { client ->
            val result = client.run("look")
            assertEquals("a pixel", result.finalText)
            val b64 = java.util.Base64.getEncoder().encodeToString(gif)
            assertTrue(seen?.contains(b64) == true, "afterTool saw $seen")
            val saved = result.transcript.toJson()
            assertTrue(saved.contains(b64) && saved.contains("image/gif"), saved)
            assertTrue(saved.contains("seen"), saved)
        }
        // A prompt of parts: bytes that are not an image are refused, naming the part.
        Client(config(text("never"))).use { client ->
            val e = assertThrows<ContenoxException.Config> {
                runBlocking { client.runParts(listOf(PromptPart.Text("x"), PromptPart.Image("hello".toByteArray(), null))) }
            }
            assertTrue(e.message!!.contains("prompt[1].data"), e.message)
        }
    }

    @Test
    fun `transcripts are saved as JSON and loaded into a new client`() = runBlocking {
        val first = Client(config(text("one")))
        val saved = first.use { it.run("first prompt").transcript.toJson() }
        assertTrue(saved.contains("first prompt"))

        val second = Client(config(text("two")))
        second.use {
            it.setTranscript(Transcript.fromJson(saved))
            assertEquals(2UL, it.transcript().len())
            val result = it.run("second prompt")
            assertEquals("two", result.finalText)
            val users = result.transcript.messages().filterIsInstance<Message.User>().map { m -> textOf(m.content) }
            assertEquals(listOf("first prompt", "second prompt"), users)
        }
        assertThrows<ContenoxException> { Transcript.fromJson("""{"messages": [{"role": "tool", "call_id": "x", "name": "y", "content": "z"}]}""") }
        assertTrue(Transcript.empty().isEmpty())
    }

    @Test
    fun `invalid configuration and misuse raise ContenoxException`() = runBlocking {
        val e = assertThrows<ContenoxException.Config> { Client("""{"style": "scripted", "script": [], "no_such_key": 1}""") }
        assertTrue(e.detail.contains("no_such_key"), e.detail)
        assertThrows<ContenoxException.Config> { Client("""{"style": "openai"}""") }
        assertThrows<ContenoxException.Config> { Client("not json") }

        val client = Client(config(text("hi")))
        assertThrows<ContenoxException.Config> { client.run("x", listOf("[bad")) }
        client.shutdown()
        assertTrue(client.isClosed())
        assertThrows<ContenoxException.Closed> { client.run("after close") }
        client.destroy()
    }

    @Test
    fun `the whole config is checked at creation, in the config JSON's names`() {
        fun refused(json: String) = assertThrows<ContenoxException.Config> { Client(json) }
        val style = refused("""{"style": "nope"}""")
        assertEquals("style", style.option)
        assertEquals("\"nope\"", style.value)
        assertEquals("is not one of openai, openai-responses, anthropic, ollama, scripted", style.reason)
        assertFalse(style.detail.contains("line "), style.detail)
        val typo = refused("""{"style": "scripted", "script": [{"txt": "x"}]}""")
        assertEquals("script[0]", typo.option)
        assertTrue(typo.reason.startsWith("unknown key \"txt\""), typo.reason)
        assertEquals("script[1]", refused("""{"style": "scripted", "script": [{"text": "a"}, {}]}""").option)
        val url = refused("""{"style": "openai", "model": "m", "base_url": "not a url"}""")
        assertEquals("base_url", url.option)
        assertEquals("\"not a url\"", url.value)
        val unknown = refused("""{"style": "scripted", "script": [], "baseUrl": "x"}""")
        assertEquals("", unknown.option)
        assertTrue(unknown.reason.contains("base_url"), unknown.reason)
    }

    @Test
    fun `model settings are options, and a run's are checked against the style before anything is sent`() = runBlocking<Unit> {
        val topK = assertThrows<ContenoxException.Config> {
            Client("""{"style": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "top_k": 3}""")
        }
        assertEquals("top_k", topK.option)
        assertTrue(topK.reason.contains("has no top_k"), topK.reason)
        // Port 9 has no server: a refused run sends nothing there.
        val client = Client("""{"style": "anthropic", "model": "m", "base_url": "http://127.0.0.1:9",
            "api_key": "k", "builtins": [], "temperature": 0.2}""")
        client.use {
            val seed = assertThrows<ContenoxException.Config> { client.run("x", null, """{"seed": 1}""") }
            assertEquals("settings.seed", seed.option)
            val shape = assertThrows<ContenoxException.Config> { client.stream("x", null, """{"tool_choice": "always"}""") }
            assertEquals("settings.tool_choice", shape.option)
            assertThrows<ContenoxException.Config> { client.run("x", null, "not json") }
        }
    }

    @Test
    fun `replacing the transcript while a turn runs is Busy`() = runBlocking {
        val client = Client(config(JSONObject().put("stall", true)))
        client.use {
            val run = client.stream("stall")
            run.events().takeWhile { it !is Event.Request }.toList()
            assertThrows<ContenoxException.Busy> { client.setTranscript(Transcript.empty()) }
            run.cancel()
            assertEquals(Outcome.CANCELLED, withTimeout(10_000) { run.result() }.outcome)
            client.setTranscript(Transcript.empty())
        }
    }

    @Test
    fun `a transport error carries its causes as the exception's cause`() = runBlocking {
        val port = java.net.ServerSocket(0).use { it.localPort } // nobody listens there now
        val cfg = """{"style": "openai", "model": "m", "api_key": "k", "base_url": "http://127.0.0.1:$port/v1"}"""
        val e = assertThrows<ContenoxException.Transport> { runBlocking { listModels(cfg) } }
        assertEquals("could not reach the model server", e.detail)
        val chain = generateSequence(e.cause) { it.cause }.map { it.message ?: "" }.toList()
        assertEquals(e.causes, chain)
        assertTrue(chain.size >= 2, chain.toString())
        assertTrue(chain.any { it.contains("refused", ignoreCase = true) }, chain.toString())
    }

    @Test
    fun `a reply that stops short says why`() = runBlocking {
        val client = Client(config(text("I can't help with that.").put("stop_reason", "refusal"), text("ok")))
        client.use {
            val events = client.streamFlow("x").toList()
            assertEquals(listOf(StopReason.REFUSAL), events.filterIsInstance<Event.Stop>().map { it.reason })
            val again = client.run("again", null, null)
            assertEquals(null, again.stopReason)
        }
        val cut = Client(config(text("cut").put("stop_reason", "max_tokens")))
        cut.use {
            val r = cut.run("x", null, null)
            assertEquals(StopReason.MAX_TOKENS, r.stopReason)
            assertEquals("max_tokens", stopReasonName(r.stopReason!!))
        }
    }

    @Test
    fun `an output schema in the config and per run gives the validated answer as outputJson`() = runBlocking<Unit> {
        val schema = JSONObject(
            """{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}""",
        )
        val client = Client(
            config(
                text("no json"),
                text("""{"n": 2}"""),
                text("""{"word": "x"}"""),
                text("still not"),
                text("again not"),
                extra = JSONObject().put("output_schema", schema).put("output_retries", 1),
            ),
        )
        client.use {
            val (events, first) = collect(client, "n?")
            assertEquals(Outcome.DONE, first.outcome)
            assertEquals(JSONObject("""{"n":2}""").toString(), JSONObject(first.outputJson!!).toString())
            assertTrue(events.any { it is Event.Retry })
            assertEquals(
                listOf("""{"n":2}"""),
                events.filterIsInstance<Event.OutputDelta>().map { it.outputJson },
            )
            // A run of its own: another schema; still invalid after one correction.
            val own = """{"type":"object","properties":{"word":{"type":"string"}},"required":["word"],"additionalProperties":false}"""
            val second = client.run("word?", null, null, own)
            assertEquals(Outcome.DONE, second.outcome)
            assertEquals("""{"word":"x"}""", second.outputJson)
            val third = client.run("n?")
            assertEquals(Outcome.OUTPUT_INVALID, third.outcome)
            assertEquals("output_invalid", outcomeName(third.outcome))
            assertNull(third.outputJson)
            assertEquals("again not", third.finalText)
            assertTrue(third.error!!.contains("not valid JSON"))
            val bad = assertThrows<ContenoxException.Config> {
                runBlocking { client.run("x", null, null, """{"type":7}""") }
            }
            assertTrue(bad.detail.contains("output_schema"))
        }
    }

    @Test
    fun `a when over events needs no else branch`() = runBlocking {
        val client = Client(config(text("hi")))
        client.use {
            // Exhaustive: a new engine event would make this fail to compile, not arrive as "other".
            val events = client.streamFlow("x").toList()
            val names = events.map { e ->
                when (e) {
                    is Event.TurnStart -> "turn_start"
                    is Event.Request -> "request"
                    is Event.TextDelta -> "text_delta"
                    is Event.OutputDelta -> "output_delta"
                    is Event.Text -> "text"
                    is Event.ReasoningDelta -> "reasoning_delta"
                    is Event.Reasoning -> "reasoning"
                    is Event.ToolCall -> "tool_call"
                    is Event.Gate -> "gate"
                    is Event.Pending -> "pending"
                    is Event.Answer -> "answer"
                    is Event.ToolStart -> "tool_start"
                    is Event.ToolResult -> "tool_result"
                    is Event.Progress -> "progress"
                    is Event.Todos -> "todos"
                    is Event.Usage -> "usage"
                    is Event.Compact -> "compact"
                    is Event.Stop -> "stop"
                    is Event.Retry -> "retry"
                    is Event.Fallback -> "fallback"
                    is Event.ChainTaskStart -> "chain_task_start"
                    is Event.ChainTaskEnd -> "chain_task_end"
                    is Event.TurnEnd -> "turn_end"
                }
            }
            assertEquals(events.map { it.kind() }, names)
            assertEquals("turn_start", names.first())
            assertEquals("turn_end", names.last())
        }
    }

    @Test
    fun `listModels, tools, register and unregister`() = runBlocking {
        val client = Client(config(text("hi"), extra = JSONObject().put("model", "my-model")))
        client.use {
            assertEquals(listOf("my-model"), it.listModels().map { m -> m.id })
            assertTrue(listModels(config(text("x"))).isNotEmpty())
            assertTrue(it.tools().isEmpty())
            val count = AtomicInteger()
            it.register(hostTool(spec("late").copy(hints = Hints(readOnly = true))) { _, _ ->
                count.incrementAndGet()
                ToolOutput("ok", false, null)
            })
            val late = it.tools().single()
            assertEquals("late", late.name)
            assertEquals(true, late.hints.readOnly)
            assertEquals(null, late.hints.destructive)
            assertEquals("object", JSONObject(late.inputSchemaJson).getString("type"))
            assertTrue(it.unregister("late"))
            assertFalse(it.unregister("late"))
            assertNotNull(JSONObject(it.configJson()).get("script"))
        }
    }

    @Test
    fun `telemetry posts the turn's spans to the endpoint and shutdown flushes them`() = runBlocking {
        val bodies = java.util.concurrent.ConcurrentLinkedQueue<String>()
        val server = com.sun.net.httpserver.HttpServer.create(java.net.InetSocketAddress("127.0.0.1", 0), 0)
        server.createContext("/v1/traces") { exchange ->
            bodies.add(exchange.requestBody.readBytes().decodeToString())
            val reply = "{}".toByteArray()
            exchange.sendResponseHeaders(200, reply.size.toLong())
            exchange.responseBody.use { it.write(reply) }
        }
        server.start()
        try {
            val telemetry = JSONObject()
                .put("endpoint", "http://127.0.0.1:${server.address.port}")
                .put("service_name", "kotlin-test")
            val client = Client(config(text("hi"), extra = JSONObject().put("telemetry", telemetry)))
            assertEquals(Outcome.DONE, client.run("hello").outcome)
            client.shutdown()
            val spans = bodies.flatMap { body ->
                val rs = JSONObject(body).getJSONArray("resourceSpans").getJSONObject(0)
                val service = rs.getJSONObject("resource").getJSONArray("attributes").getJSONObject(0)
                assertEquals("kotlin-test", service.getJSONObject("value").getString("stringValue"))
                val list = rs.getJSONArray("scopeSpans").getJSONObject(0).getJSONArray("spans")
                (0 until list.length()).map { list.getJSONObject(it).getString("name") }
            }
            assertEquals(listOf("chat scripted", "invoke_agent"), spans.sorted())
        } finally {
            server.stop(0)
        }
    }

    @Test
    fun `a bad telemetry option is a Config error naming it`() {
        val e = assertThrows<ContenoxException.Config> {
            Client(config(text("hi"), extra = JSONObject().put("telemetry", JSONObject().put("endpoint", "ftp://x"))))
        }
        assertTrue(e.detail.contains("telemetry"), e.detail)
    }
}
