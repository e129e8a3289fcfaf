package contenox

import java.io.File
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.nio.file.Files
import java.nio.file.Path
import java.time.Duration
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory

/**
 * The conformance runner of the Kotlin binding: every scenario of `tests/conformance/scenarios`
 * and of each `$CONTENOX_SCENARIOS` directory runs through the Kotlin
 * API against the fake model server, and `conformance-check` judges the trace. One test per
 * scenario, named after it.
 */
class ConformanceTest {
    private val repo = File(System.getProperty("contenox.repo") ?: "../..").canonicalFile
    private val binDir = File(repo, "target/debug")
    private val fakeServer = System.getenv("FAKE_MODEL_SERVER") ?: File(binDir, "fake-model-server").path
    private val checker = System.getenv("CONFORMANCE_CHECK") ?: File(binDir, "conformance-check").path
    private val fakeRemote = System.getenv("FAKE_REMOTE_SERVICE") ?: File(binDir, "fake-remote-service").path

    private fun scenarioFiles(): List<File> {
        val dirs = mutableListOf(File(repo, "tests/conformance/scenarios"))
        val fromEnv = System.getenv("CONTENOX_SCENARIOS")
        if (fromEnv != null) {
            fromEnv.split(':').filter { it.isNotEmpty() }.forEach { dirs.add(File(it)) }
        } else {
            // as the harness does without the variable: the shared starter set beside the repo
            File(repo, "../shared/conformance/scenarios").takeIf { it.isDirectory }?.let { dirs.add(it) }
        }
        val seen = mutableSetOf<String>()
        val files = mutableListOf<File>()
        for (dir in dirs) {
            if (!seen.add(dir.canonicalPath)) continue
            if (!dir.isDirectory) {
                if (dir.path.startsWith(repo.path)) continue // the project's own folder may be empty/absent
                error("scenario directory ${dir.path} does not exist")
            }
            files += dir.listFiles { f -> f.isFile && f.name.endsWith(".json") }!!.sortedBy { it.name }
        }
        return files
    }

    @TestFactory
    fun scenarios(): List<DynamicTest> {
        val only = System.getProperty("contenox.only")?.takeIf { it.isNotEmpty() }?.let(::Regex)
        val files = scenarioFiles().filter { only == null || only.containsMatchIn(it.name) }
        assertTrue(files.isNotEmpty(), "no scenarios found (set CONTENOX_SCENARIOS)")
        val names = mutableMapOf<String, Int>()
        return files.map { file ->
            val base = file.name.removeSuffix(".json")
            val n = names.merge(base, 1, Int::plus)!!
            val label = if (n == 1) base else "$base (${file.parentFile.path})"
            DynamicTest.dynamicTest(label) { runAndCheck(file) }
        }
    }

    private fun runAndCheck(file: File) {
        val scenario = JSONObject(file.readText())
        val workdir = Files.createTempDirectory("contenox-conf")
        try {
            val trace = try {
                runBlocking { withTimeout(30_000) { ScenarioRun(repo, file, scenario, workdir, fakeServer, fakeRemote).run() } }
            } catch (e: TimeoutCancellationException) {
                fail<String>("${file.name}: still running after 30 s", e)
            }
            val traceFile = workdir.resolve("trace.json").toFile()
            traceFile.writeText(trace)
            System.getenv("CONTENOX_TRACE_DIR")?.let { dir ->
                File(dir).mkdirs()
                File(dir, "${scenario.getString("name")}.kotlin.json").writeText(trace)
            }
            val check = ProcessBuilder(checker, file.path, traceFile.path).redirectErrorStream(true).start()
            val output = check.inputStream.bufferedReader().readText()
            if (!check.waitFor(30, TimeUnit.SECONDS)) {
                check.destroyForcibly()
                fail<Unit>("conformance-check did not finish")
            }
            if (check.exitValue() != 0) fail<Unit>("${file.name}: conformance-check:\n$output")
        } finally {
            workdir.toFile().deleteRecursively()
        }
    }
}

/** One scenario run: fake server, client through the public Kotlin API, trace. */
private class ScenarioRun(
    val repo: File,
    val file: File,
    val scenario: JSONObject,
    val workdir: Path,
    val fakeServer: String,
    val fakeRemote: String,
) {
    private val root: Path = Files.createDirectories(workdir.resolve("root"))
    private val answers = ConcurrentLinkedQueue<Any>()
    private var client: Client? = null
    private val meeting = Meeting()
    /** The scenario's `subagents`, built before the scenario's client and shut down after it. */
    private val subagentSpecs = scenario.optJSONArray("subagents")?.map { it as JSONObject } ?: emptyList()
    private val subagents = mutableListOf<Client>()
    /** What `onCompact` was told, as JSON, in order. */
    private val compactions = ConcurrentLinkedQueue<String>()
    /** Extension `lifecycle`: each call of the scenario's lifecycle hooks, in order. */
    private val lifecycleLog = ConcurrentLinkedQueue<String>()

    suspend fun run(): String {
        writeWorkspace()
        scenario.optJSONArray("wait_for")?.forEach { answers.add(it) }
        val server = FakeServer.start(fakeServer, file)
        val mcp = McpSetup(repo)
        val remote = RemoteSetup(fakeRemote, file)
        try {
            scenario.optJSONObject("mcp")?.let { mcp.start(it) }
            scenario.optJSONArray("remote")?.takeIf { it.length() > 0 }?.let { remote.start(it) }
            val baseUrl = server.baseUrl(scenario.getString("style"))
            val config = clientConfig(baseUrl)
            buildSubagents(baseUrl)
            val events = mutableListOf<String>()
            val actions = scenario.optJSONArray("actions")?.map { it as JSONObject } ?: emptyList()
            val fired = BooleanArray(actions.size)
            val prompts = listOf(scenario.getString("prompt")) +
                (scenario.optJSONArray("more_prompts")?.map { it as String } ?: emptyList())
            val restart = scenario.optBoolean("restart_between_prompts", false)
            // SPEC "Approval policies": the creation error is the result; no turn runs.
            fun refused(e: ContenoxException.Config): String {
                if (scenario.optJSONObject("expect")?.has("config_error_contains") != true) throw e
                return buildString {
                    append("{\"scenario\":").append(JSONObject.quote(scenario.getString("name")))
                    append(",\"binding\":\"kotlin\"")
                    append(",\"config_error\":").append(JSONObject.quote(e.detail))
                    append(",\"requests\":").append(server.requests())
                    append(",\"workspace\":").append(snapshot())
                    append("}")
                }
            }
            var current = try {
                build(config)
            } catch (e: ContenoxException.Config) {
                return refused(e)
            }
            // before the first prompt, into the first client (`mcp` is not combined with
            // `restart_between_prompts`: shutting a client down stops the servers given to it)
            mcp.registerInto(current)
            remote.registerInto(current)
            remote.bringUp()
            scenario.optJSONObject("transcript")?.let { current.setTranscript(Transcript.fromJson(it.toString())) }
            var last: TurnResult? = null
            // Extension `chain`: each prompt is the chain's input; a chain that does not read is
            // the trace's `chain_error` (nothing runs).
            val chain = scenario.opt("chain")?.toString()
            var chainError: String? = null
            // Extension `step`: the prompt is one turn the runner steps (its only prompt).
            val stepped = scenario.optJSONObject("step")?.let { spec ->
                Stepped(spec).also { last = it.run(current, prompts[0], events) { build(config) } }
            }
            for ((i, prompt) in prompts.withIndex()) {
                if (stepped != null) break
                if (restart && i > 0) {
                    // save the conversation as JSON, continue in a new client built from it
                    val saved = current.transcript().toJson()
                    release()
                    current = build(config)
                    current.setTranscript(Transcript.fromJson(saved))
                    remote.registerInto(current)
                }
                // Extension `run_settings`: the first prompt's run has its own model settings; a
                // refusal of them is the trace's config_error.
                val settings = if (i == 0) scenario.optJSONObject("run_settings")?.toString() else null
                // Extension `prompt_parts`: the first prompt as parts, image data as a ByteArray.
                val parts = if (i == 0) scenario.optJSONArray("prompt_parts")?.let(::kotlinParts) else null
                // Extension `run_output_schema`: the first prompt's run has its own output schema.
                val outputSchema = if (i == 0) scenario.optJSONObject("run_output_schema")?.toString() else null
                val run = if (chain == null) {
                    try {
                        if (parts == null) current.stream(prompt, null, settings, outputSchema)
                        else current.streamParts(parts, null, settings, outputSchema)
                    } catch (e: ContenoxException.Config) {
                        release()
                        return refused(e)
                    }
                } else {
                    try {
                        current.streamChain(chain, prompt, null, settings)
                    } catch (e: ContenoxException.Config) {
                        chainError = e.detail
                        break
                    }
                }
                run.use {
                    run.events().collect { event ->
                        for ((n, action) in actions.withIndex()) {
                            if (fired[n] || !matches(event, action.getString("on"))) continue
                            fired[n] = true
                            when (val todo = action.get("do")) {
                                "cancel" -> run.cancel()
                                is JSONObject -> {
                                    val name = todo.getJSONObject("register").getString("name")
                                    current.register(echoTool(name, null))
                                }
                                else -> error("unknown action $todo")
                            }
                        }
                        events.add(event.toJson())
                    }
                    last = run.result()
                }
            }
            // Extension `resume`: the last turn suspended; a client built again from the same
            // parts resumes it from its checkpoint with `answers` (under `policy` when given,
            // after `wait_ms`, from a checkpoint `edit`ed to be `tampered` or `newer`, a second
            // time when `twice`). A refusal is the trace's `resume_error`.
            var resumeError: String? = null
            val spec = scenario.optJSONObject("resume")
            if (spec != null) {
                val checkpoint = editCheckpoint(
                    last?.checkpoint ?: error("resume: the turn did not suspend"),
                    spec.optString("edit", ""),
                )
                if (spec.has("wait_ms")) delay(spec.getLong("wait_ms"))
                release()
                current = build(config)
                spec.optJSONObject("policy")?.let { current.setPolicy(it.toString()) }
                val given = spec.optJSONObject("answers") ?: JSONObject()
                val answerMap = given.keySet().associateWith { answerOf(given.getJSONObject(it)) }
                for (k in 0 until if (spec.optBoolean("twice", false)) 2 else 1) {
                    val run = try {
                        current.resumeStream(checkpoint, answerMap)
                    } catch (e: ContenoxException.Checkpoint) {
                        resumeError = e.detail
                        break
                    }
                    run.use {
                        run.events().collect { event -> events.add(event.toJson()) }
                        last = run.result()
                    }
                }
            }
            val told = compactions.toList()
            if (scenario.has("settle_ms")) delay(scenario.getLong("settle_ms"))
            val requests = server.requests()
            val remoteRequests = remote.requests()
            chainError?.let { error ->
                return buildString {
                    append("{\"scenario\":").append(JSONObject.quote(scenario.getString("name")))
                    append(",\"binding\":\"kotlin\",\"outcome\":null,\"final_text\":null,\"usage\":null")
                    append(",\"events\":[").append(events.joinToString(",")).append("]")
                    append(",\"requests\":").append(requests)
                    append(",\"workspace\":").append(snapshot())
                    append(",\"chain_error\":").append(JSONObject.quote(error))
                    append("}")
                }
            }
            val result = last!!
            return buildString {
                append("{\"scenario\":").append(JSONObject.quote(scenario.getString("name")))
                append(",\"binding\":\"kotlin\"")
                append(",\"outcome\":").append(JSONObject.quote(outcomeName(result.outcome)))
                append(",\"final_text\":").append(JSONObject.quote(result.finalText))
                append(",\"usage\":{\"input_tokens\":").append(result.usage.inputTokens)
                append(",\"output_tokens\":").append(result.usage.outputTokens)
                append(",\"cache_read_input_tokens\":").append(result.usage.cacheReadInputTokens)
                append(",\"cache_creation_input_tokens\":").append(result.usage.cacheCreationInputTokens)
                append(",\"reasoning_tokens\":").append(result.usage.reasoningTokens).append("}")
                append(",\"events\":[").append(events.joinToString(",")).append("]")
                append(",\"requests\":").append(requests)
                append(",\"workspace\":").append(snapshot())
                append(",\"remote_requests\":").append(remoteRequests)
                append(",\"compactions\":[").append(told.joinToString(",")).append("]")
                append(",\"output\":").append(result.outputJson ?: "null")
                resumeError?.let { append(",\"resume_error\":").append(JSONObject.quote(it)) }
                if (scenario.has("lifecycle")) append(",\"lifecycle\":").append(JSONArray(lifecycleLog.toList()))
                stepped?.let { append(it.traceMembers()) }
                append("}")
            }
        } finally {
            release()
            for (c in subagents) {
                c.shutdown()
                c.destroy()
            }
            withContext(NonCancellable) { mcp.close() }
            withContext(NonCancellable) { remote.close() }
            server.stop()
        }
    }

    /**
     * Extension `step` (tests/conformance/README.md): the prompt as a turn stepped by the runner
     * through `client.step`, every action performed (an ask's `perform` asks the scripted
     * `waitFor`); with `wrong_feed`, a result for no waiting action is fed before the first
     * action is answered and after done (each refusal's text is a `step_errors` entry); with
     * `replay`, a client built again steps the same prompt from the first stepper's `options()`
     * and is fed its `journal()` (the fake server's script is used up: real I/O would show).
     */
    private inner class Stepped(private val spec: JSONObject) {
        private val actions = JSONArray()
        private val replayActions = JSONArray()
        private val errors = JSONArray()
        private var turnId = ""
        private var replayFinalText: String? = null

        private fun json(a: Action): JSONObject = when (a) {
            is Action.ModelRequest -> JSONObject().put("kind", "model_request").put("step", a.step.toLong())
            is Action.SummaryRequest -> JSONObject().put("kind", "summary_request").put("step", a.step.toLong())
            is Action.ToolCall -> JSONObject().put("kind", "tool_call").put("name", a.call.name)
                .put("call_id", a.call.id).put("idempotency_key", a.idempotencyKey)
            is Action.Ask -> JSONObject().put("kind", "ask").put("call_id", a.request.callId)
            is Action.Done -> JSONObject().put("kind", "done")
        }

        /** A feed that must be refused: its message is a `step_errors` entry (none if it was not). */
        private fun refused(feed: () -> Unit) {
            try {
                feed()
            } catch (e: ContenoxException.Step) {
                errors.put(e.detail)
            }
        }

        /** Step the turn; its result. `again` builds the replay's client. */
        suspend fun run(client: Client, prompt: String, events: MutableList<String>, again: () -> Client): TurnResult {
            val wrongFeed = spec.optBoolean("wrong_feed", false)
            val (result, journal, options) = client.step(prompt).use { stepper ->
                turnId = stepper.turnId()
                if (wrongFeed) {
                    stepper.next()
                    refused { stepper.feed(ActionResult.ToolResult("nope", ToolOutput("x", false, null))) }
                }
                var done: TurnResult? = null
                for (n in 0 until MAX_ACTIONS) {
                    val action = stepper.next()
                    actions.put(json(action))
                    if (action is Action.Done) {
                        done = action.result
                        break
                    }
                    stepper.perform()
                    stepper.events().forEach { events.add(it.toJson()) }
                }
                stepper.events().forEach { events.add(it.toJson()) }
                if (wrongFeed) refused { stepper.feed(ActionResult.Answer("nope", Answer.Approve)) }
                Triple(done ?: error("step: no done after $MAX_ACTIONS actions"), stepper.journal(), stepper.options())
            }
            if (spec.optBoolean("replay", false)) {
                release()
                again().step(prompt, options).use { stepper ->
                    for (n in 0..journal.size) {
                        val action = stepper.next()
                        replayActions.put(json(action))
                        if (action is Action.Done) {
                            replayFinalText = action.result.finalText
                            break
                        }
                        // a refusal here is the runner's error: the scenario fails
                        stepper.feed(journal.getOrNull(n) ?: error("replay: an action beyond the journal: $action"))
                    }
                }
            }
            return result
        }

        /** The trace's step members, each after a comma. */
        fun traceMembers(): String = buildString {
            append(",\"turn_id\":").append(JSONObject.quote(turnId))
            append(",\"actions\":").append(actions)
            append(",\"step_errors\":").append(errors)
            if (spec.optBoolean("replay", false)) {
                append(",\"replay_actions\":").append(replayActions)
                append(",\"replay_final_text\":").append(replayFinalText?.let(JSONObject::quote) ?: "null")
            }
        }
    }

    /** Shut down and free the current client, if any. */
    private fun release() {
        client?.let {
            it.shutdown()
            it.destroy()
        }
        client = null
    }

    private fun writeWorkspace() {
        val ws = scenario.optJSONObject("workspace") ?: return
        for (path in ws.keySet()) {
            val f = root.resolve(path)
            Files.createDirectories(f.parent)
            Files.writeString(f, ws.getString(path))
        }
    }

    private fun snapshot(): String {
        val files = root.toFile().walkTopDown().filter { it.isFile }.sortedBy { it.path }
        return files.joinToString(",", "{", "}") { f ->
            val rel = root.relativize(f.toPath()).toString().replace('\\', '/')
            JSONObject.quote(rel) + ":" + JSONObject.quote(String(f.readBytes(), Charsets.UTF_8))
        }
    }

    private fun clientConfig(baseUrl: String): String {
        val cfg = JSONObject(scenario.optJSONObject("config")?.toString() ?: "{}")
        // `websearch` is a provider the host supplies (see `searchProvider`), not a core option
        cfg.remove("websearch")
        cfg.put("style", scenario.getString("style"))
        // A `fallback` entry of another style without a base URL talks to the fake server too
        // (it serves every style's chat endpoint).
        val serverRoot = baseUrl.removeSuffix("/v1")
        cfg.optJSONArray("fallback")?.forEach { entry ->
            val f = entry as? JSONObject ?: return@forEach
            val other = f.optString("style", scenario.getString("style"))
            if (other != scenario.getString("style") && !f.has("base_url")) {
                f.put("base_url", if (other.startsWith("openai")) "$serverRoot/v1" else serverRoot)
            }
        }
        cfg.put("base_url", baseUrl)
        cfg.put("model", "fake")
        cfg.put("api_key", "test")
        cfg.put("root", root.toString())
        return cfg.toString()
    }

    private fun build(config: String): Client {
        val tools = scenario.optJSONArray("host_tools")?.map { hostToolOf(it as JSONObject) } ?: emptyList()
        val onCompact = object : OnCompact {
            override suspend fun onCompact(notice: CompactNotice) {
                compactions.add(noticeJson(notice))
            }
        }
        val lifecycle = scenario.optJSONObject("lifecycle")?.let { ScenarioLifecycle(it, lifecycleLog) }
        val built = Client(
            config, tools, RuleHooks(scenario), ScriptedWaitFor(answers), searchProvider(), onCompact,
            lifecycle = lifecycle,
        )
        client = built
        for (sub in subagentSpecs.filter { it.optBoolean("in_parent", true) }) {
            built.register(subagentTool(sub.getString("name")))
        }
        return built
    }

    /** Every subagent's client (same server and root; its own `before_tool` and `wait_for`
     *  only when given), then the subagents each one lists registered into it. */
    private fun buildSubagents(baseUrl: String) {
        for (sub in subagentSpecs) {
            val cfg = JSONObject(sub.optJSONObject("config")?.toString() ?: "{}")
            cfg.put("style", scenario.getString("style"))
            cfg.put("base_url", baseUrl)
            cfg.put("model", "fake")
            cfg.put("api_key", "test")
            cfg.put("root", root.toString())
            val tools = sub.optJSONArray("host_tools")?.map { hostToolOf(it as JSONObject) } ?: emptyList()
            val hooks = if (sub.has("before_tool")) RuleHooks(sub) else null
            val waitFor = sub.optJSONArray("wait_for")?.let { list ->
                ScriptedWaitFor(ConcurrentLinkedQueue<Any>().also { q -> list.forEach { q.add(it) } })
            }
            subagents.add(Client(cfg.toString(), tools, hooks, waitFor))
        }
        for ((i, sub) in subagentSpecs.withIndex()) {
            sub.optJSONArray("subagents")?.forEach { subagents[i].register(subagentTool(it as String)) }
        }
    }

    private fun subagentTool(name: String): SourceTool {
        val i = subagentSpecs.indexOfFirst { it.getString("name") == name }
        if (i < 0) error("no subagent $name")
        val sub = subagentSpecs[i]
        val description = sub.optString("description", "The subagent $name.")
        return subagents[i].asToolWith(name, description, sub.optJSONObject("options")?.toString())
    }

    private fun noticeJson(n: CompactNotice): String {
        val o = JSONObject()
        o.put("trigger", n.trigger.name.lowercase())
        o.put("pre_tokens", n.preTokens.toLong())
        o.put("post_tokens", n.postTokens.toLong())
        n.summary?.let { o.put("summary", it) }
        o.put(
            "usage",
            JSONObject()
                .put("input_tokens", n.usage.inputTokens.toLong())
                .put("output_tokens", n.usage.outputTokens.toLong()),
        )
        return o.toString()
    }

    /** `config.websearch`: false/absent = off; `{"results": [...]}` = a provider answering every
     *  query with those results (the engine filters and caps them). */
    private fun searchProvider(): WebSearchProvider? {
        val ws = scenario.optJSONObject("config")?.opt("websearch")
        if (ws == null || ws == false || ws == JSONObject.NULL) return null
        val results = (ws as? JSONObject)?.optJSONArray("results")
            ?: error("websearch must be false or {\"results\": [...]}, got $ws")
        val fixed = results.map { r ->
            r as JSONObject
            SearchResult(r.getString("title"), r.getString("url"), r.optString("snippet", ""))
        }
        return object : WebSearchProvider {
            override suspend fun search(request: SearchRequest): List<SearchResult> = fixed
        }
    }

    /** `type[:name][@agent]`: `@a/b` a subagent chain, `@*` any subagent, `@` the client's
     *  own; no `@` = any origin. */
    private fun matches(event: Event, pattern: String): Boolean {
        val agent = if (pattern.contains('@')) pattern.substringAfter('@') else null
        val p = pattern.substringBefore('@')
        val kind = p.substringBefore(':')
        val name = if (p.contains(':')) p.substringAfter(':') else null
        if (event.kind() != kind || (name != null && event.toolName() != name)) return false
        val chain = event.agent()
        return when (agent) {
            null -> true
            "*" -> chain.isNotEmpty()
            else -> chain.joinToString("/") == agent
        }
    }

    private fun specOf(t: JSONObject): ToolSpec {
        val h = t.optJSONObject("hints")
        fun hint(key: String): Boolean? = if (h != null && h.has(key) && !h.isNull(key)) h.getBoolean(key) else null
        return ToolSpec(
            name = t.getString("name"),
            description = t.optString("description", "Host tool ${t.getString("name")} (${t.getString("kind")})."),
            inputSchemaJson = t.opt("schema")?.takeIf { it != JSONObject.NULL }?.toString() ?: """{"type":"object"}""",
            hints = Hints(readOnly = hint("readOnly"), destructive = hint("destructive"), openWorld = hint("openWorld")),
            tier = if (t.optString("tier", "core") == "deferred") Tier.DEFERRED else Tier.CORE,
        )
    }

    private fun echoTool(name: String, spec: ToolSpec?): HostTool =
        hostTool(spec ?: ToolSpec(name, "Echo the arguments.", """{"type":"object"}""", Hints(), Tier.CORE)) { args, _ ->
            ToolOutput(content = args, isError = false, metadataJson = null)
        }

    private fun hostToolOf(t: JSONObject): HostTool {
        val spec = specOf(t)
        return when (val kind = t.getString("kind")) {
            "echo" -> echoTool(spec.name, spec)
            // the language's ordinary error
            "fail" -> hostTool(spec) { args, _ -> throw RuntimeException(JSONObject(args).optString("message", "failed")) }
            "sleep" -> hostTool(spec) { args, _ ->
                delay(JSONObject(args).optLong("ms", 0))
                ToolOutput("slept", false, null)
            }
            "rendezvous" -> hostTool(spec) { args, _ -> ToolOutput(meeting.rendezvous(JSONObject(args)), false, null) }
            "register" -> hostTool(spec) { args, _ ->
                val name = JSONObject(args).getString("name")
                val c = client ?: error("the client is not built yet")
                c.register(echoTool(name, null))
                ToolOutput("registered", false, null)
            }
            else -> error("unknown host tool kind $kind")
        }
    }
}

/** A rule's `match` against a call. */
private fun ruleMatches(m: JSONObject, call: ToolCallEvent): Boolean {
    if (m.has("name") && m.getString("name") != call.name) return false
    if (m.has("hint")) {
        val v = when (val h = m.getString("hint")) {
            "readOnly" -> call.hints.readOnly
            "destructive" -> call.hints.destructive
            "openWorld" -> call.hints.openWorld
            else -> error("unknown hint $h")
        }
        if (v != true) return false
    }
    if (m.has("no_hints")) {
        val none = call.hints.readOnly == null && call.hints.destructive == null && call.hints.openWorld == null
        if (none != m.getBoolean("no_hints")) return false
    }
    if (m.has("source") && m.getString("source") != call.source.name.lowercase()) return false
    if (m.has("server") && m.getString("server") != call.server) return false
    return true
}

/** The JSON text of a value, strings as they are (what the engine sends of a JSON result). */
private fun resultText(v: Any): String = when (v) {
    is String -> v
    else -> canonicalJson(v)
}

/** Compact JSON with sorted keys, as the engine writes it. */
private fun canonicalJson(v: Any?): String = when (v) {
    null, JSONObject.NULL -> "null"
    is JSONObject -> v.keySet().sorted().joinToString(",", "{", "}") { JSONObject.quote(it) + ":" + canonicalJson(v.get(it)) }
    is JSONArray -> (0 until v.length()).joinToString(",", "[", "]") { canonicalJson(v.get(it)) }
    is String -> JSONObject.quote(v)
    is Boolean -> v.toString()
    is Number -> JSONObject.numberToString(v)
    else -> error("not JSON: $v")
}

/**
 * What the run's `rendezvous` tools share (README): the calls running now, and the meetings so
 * far (a call that finds `count` running releases every call running then).
 */
private class Meeting {
    private var running = 0L
    private var epoch = 0L

    suspend fun rendezvous(args: JSONObject): String {
        val count = args.optLong("count", 1)
        val deadline = System.nanoTime() + args.optLong("timeout_ms", 5000) * 1_000_000
        val (entered, seen) = synchronized(this) {
            running += 1
            val e = epoch
            if (running >= count) epoch += 1
            e to running
        }
        val over = if (args.has("max") && seen > args.getLong("max")) "; over max: $seen running" else ""
        try {
            while (true) {
                val (now, ep) = synchronized(this) { running to epoch }
                if (ep > entered) {
                    delay(args.optLong("hold_ms", 0))
                    return "met $count$over"
                }
                if (System.nanoTime() >= deadline) return "timed out with $now running$over"
                delay(5)
            }
        } finally {
            synchronized(this) { running -= 1 }
        }
    }
}

private class RuleHooks(scenario: JSONObject) : Hooks {
    private val before = scenario.optJSONArray("before_tool")?.map { it as JSONObject } ?: emptyList()
    private val after = scenario.optJSONArray("after_tool")?.map { it as JSONObject } ?: emptyList()

    override suspend fun beforeTool(call: ToolCallEvent): Decision {
        val rule = before.firstOrNull { ruleMatches(it.optJSONObject("match") ?: JSONObject(), call) }
            ?: return Decision.Allow
        return when (val d = rule.get("decision")) {
            "allow" -> Decision.Allow
            is JSONObject -> when {
                d.has("deny") -> Decision.Deny(if (d.isNull("deny")) null else d.getString("deny"))
                d.has("ask") -> {
                    val a = d.getJSONObject("ask")
                    Decision.Ask(
                        kind = a.optString("kind", "approval"),
                        prompt = if (a.has("prompt") && !a.isNull("prompt")) a.getString("prompt") else null,
                        timeoutMs = if (a.has("timeout_ms") && !a.isNull("timeout_ms")) a.getLong("timeout_ms").toULong() else null,
                        dataJson = null,
                    )
                }
                else -> error("unknown decision $d")
            }
            else -> error("unknown decision $d")
        }
    }

    override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? {
        val rule = after.firstOrNull { ruleMatches(it.optJSONObject("match") ?: JSONObject(), call) } ?: return null
        return ToolOutput(content = resultText(rule.get("replace")), isError = false, metadataJson = null)
    }
}

/**
 * Extension `lifecycle`: for each point named, the answer every call gives (core's JSON form as
 * the binding's types; `true` for an observer) or `"raise"`; every call is logged as `point` or
 * `point:detail` before it answers. Points not named answer as [LifecycleHooksBase] does.
 */
private class ScenarioLifecycle(
    private val spec: JSONObject,
    private val log: ConcurrentLinkedQueue<String>,
) : LifecycleHooksBase() {
    /** The point's given answer as (tag, text), or null for its default; throws for "raise". */
    private fun answer(point: String, entry: String): Pair<String, String>? {
        log.add(entry)
        return when (val given = spec.get(point)) {
            "raise" -> throw IllegalStateException("$point raised")
            is JSONObject -> given.keys().next().let { it to given.getString(it) }
            else -> null
        }
    }

    override suspend fun onPrompt(prompt: String): PromptAction {
        if (!spec.has("on_prompt")) return PromptAction.Continue
        return when (val a = answer("on_prompt", "on_prompt")) {
            null -> PromptAction.Continue
            else -> when (a.first) {
                "replace" -> PromptAction.Replace(a.second)
                "add_context" -> PromptAction.AddContext(a.second)
                "refuse" -> PromptAction.Refuse(a.second)
                else -> error("unknown on_prompt answer ${a.first}")
            }
        }
    }

    override suspend fun onStop(finalText: String): StopAction {
        if (!spec.has("on_stop")) return StopAction.Stop
        return answer("on_stop", "on_stop")?.let { StopAction.Continue(it.second) } ?: StopAction.Stop
    }

    override suspend fun beforeCompact(request: CompactRequest): CompactAction {
        if (!spec.has("before_compact")) return CompactAction.Proceed
        val trigger = request.trigger.name.lowercase()
        return when (val a = answer("before_compact", "before_compact:$trigger")) {
            null -> CompactAction.Proceed
            else -> if (a.first == "veto") CompactAction.Veto(a.second) else CompactAction.Instructions(a.second)
        }
    }

    override suspend fun onToolError(call: ToolCallEvent, result: ToolOutput) {
        if (spec.has("on_tool_error")) answer("on_tool_error", "on_tool_error:${call.name}")
    }

    override suspend fun onTurnStart(prompt: String) {
        if (spec.has("on_turn_start")) answer("on_turn_start", "on_turn_start")
    }

    override suspend fun onTurnEnd(end: TurnEndInfo) {
        if (spec.has("on_turn_end")) answer("on_turn_end", "on_turn_end:${outcomeName(end.outcome)}")
    }

    override suspend fun onNotification(notification: Notification) {
        if (spec.has("on_notification")) {
            answer("on_notification", "on_notification:${notification.kind.name.lowercase()}")
        }
    }
}

private class ScriptedWaitFor(private val answers: ConcurrentLinkedQueue<Any>) : WaitFor {
    override suspend fun waitFor(request: PendingRequest): Answer {
        val next = answers.poll() ?: "never"
        if (next == "never") awaitCancellation()
        return answerOf(next as JSONObject)
    }
}

/** A scenario's answer object as the binding's `Answer`. */
private fun answerOf(a: JSONObject): Answer = when {
    a.has("result") -> Answer.Result(canonicalJson(a.get("result")))
    a.optBoolean("suspend", false) -> Answer.Suspend
    a.optBoolean("approve", false) -> Answer.Approve
    else -> Answer.Deny(if (a.has("message") && !a.isNull("message")) a.getString("message") else null)
}

/** Extension `resume.edit`: `newer` raises the version, `tampered` changes the first call's arguments. */
private fun editCheckpoint(checkpoint: String, edit: String): String {
    if (edit.isEmpty()) return checkpoint
    val cp = JSONObject(checkpoint)
    when (edit) {
        "newer" -> cp.put("version", cp.getInt("version") + 1)
        "tampered" -> cp.getJSONObject("reply").getJSONArray("calls").getJSONObject(0)
            .getJSONObject("arguments").put("tampered", true)
        else -> error("resume.edit: $edit is not newer or tampered")
    }
    return cp.toString()
}

/**
 * The scenario key `mcp` (tests/conformance/README.md; the Rust runner's `mcp_support.rs`): the
 * project's test servers (tests/mcp, installed by tests/mcp/install.sh) as an `mcpServers`
 * config, loaded with [loadMcp] and registered into the client with [McpSource.registerInto]
 * (plus [McpSource.resourceTools] when asked). A server that does not come up fails the
 * scenario. The runner starts the `"transport": "http"` servers itself and stops them at the end.
 */
private class McpSetup(private val repo: File) {
    private var source: McpSource? = null
    private var resourceTools = false
    private val http = mutableListOf<Process>()

    suspend fun start(spec: JSONObject) {
        resourceTools = spec.optBoolean("resource_tools", false)
        val servers = spec.optJSONObject("servers") ?: error("mcp: \"servers\" must be an object")
        val entries = JSONObject()
        for (name in servers.keySet().sorted()) {
            val s = servers.getJSONObject(name)
            val server = s.optString("server").ifEmpty { error("mcp: server $name needs \"server\"") }
            val entry = when (val transport = s.optString("transport", "stdio")) {
                "stdio" -> {
                    val (command, args) = commandOf(server, null)
                    JSONObject().put("command", command).put("args", JSONArray(args))
                }
                "http" -> JSONObject().put("type", "http").put("url", startHttp(server))
                else -> error("mcp: unknown transport $transport")
            }
            for (key in listOf("inject", "headers", "timeout_ms", "env", "elicitation", "sampling", "roots")) {
                if (s.has(key)) entry.put(key, s.get(key))
            }
            entries.put(name, entry)
        }
        val loaded = loadMcp(JSONObject().put("mcpServers", entries).toString())
        source = loaded
        val failed = loaded.servers().mapNotNull { s ->
            (s.state as? ServerState.Failed)?.let { "mcp: server ${s.name} failed: ${it.error}" }
        }
        if (failed.isNotEmpty()) error(failed.joinToString("\n"))
    }

    fun registerInto(client: Client) {
        val src = source ?: return
        src.registerInto(client)
        if (resourceTools) src.resourceTools().forEach { client.register(it) }
    }

    /** Stop the MCP servers (and free the source), and the HTTP servers this runner started. */
    suspend fun close() {
        source?.let {
            it.shutdown()
            it.close()
        }
        source = null
        for (p in http) {
            p.descendants().forEach { it.destroyForcibly() }
            p.destroyForcibly()
            p.waitFor(5, TimeUnit.SECONDS)
        }
        http.clear()
    }

    private fun installed(f: File, what: String): String {
        check(f.exists()) { "$what not found at ${f.path}: run tests/mcp/install.sh" }
        return f.path
    }

    /** The Python with the `mcp` SDK: $CONTENOX_MCP_PYTHON or tests/mcp/.venv. */
    private fun python(): String =
        System.getenv("CONTENOX_MCP_PYTHON") ?: installed(File(repo, "tests/mcp/.venv/bin/python"), "the MCP venv")

    /** The program and arguments of a test server, over stdio or over HTTP on `port`. */
    private fun commandOf(server: String, port: Int?): Pair<String, List<String>> = when (server) {
        "fast" -> {
            val script = installed(File(repo, "tests/mcp/fast_server.py"), "fast_server.py")
            python() to (listOf(script) + (port?.let { listOf("http", it.toString()) } ?: emptyList()))
        }
        "everything" -> {
            val modules = System.getenv("CONTENOX_MCP_NODE_MODULES")?.let(::File) ?: File(repo, "tests/mcp/node_modules")
            val js = installed(
                File(modules, "@modelcontextprotocol/server-everything/dist/index.js"),
                "@modelcontextprotocol/server-everything",
            )
            "node" to listOf(js, if (port != null) "streamableHttp" else "stdio")
        }
        else -> error("mcp: unknown test server \"$server\" (expected \"fast\" or \"everything\")")
    }

    /** Start a test server over streamable HTTP on a free port; its URL once it listens. */
    private suspend fun startHttp(server: String): String {
        val port = ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { it.localPort }
        val (command, args) = commandOf(server, port)
        val pb = ProcessBuilder(listOf(command) + args)
            .redirectInput(ProcessBuilder.Redirect.from(File("/dev/null")))
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.DISCARD)
        pb.environment()["PORT"] = port.toString()
        http += pb.start()
        val deadline = System.nanoTime() + 20_000_000_000L
        while (true) {
            val up = runCatching { Socket(InetAddress.getLoopbackAddress(), port).close() }.isSuccess
            if (up) return "http://127.0.0.1:$port/mcp"
            check(System.nanoTime() < deadline) { "mcp: $server over HTTP did not listen on $port" }
            delay(50)
        }
    }
}

/**
 * The scenario key `remote` (tests/conformance/README.md; the Rust runner's `remote_support.rs`):
 * `fake-remote-service --scenario FILE` serves the scenario's services and prints
 * `{control, hooks, services}`; the hooks are loaded with [loadRemote] and registered into the
 * client; the `unreachable` ones are started (`POST /_fake/up`) before the first prompt, and
 * `GET /_fake/remote_requests` is the trace's `remote_requests`.
 */
private class RemoteSetup(private val binary: String, private val file: File) {
    private var process: Process? = null
    private var source: RemoteSource? = null
    private var control = 0
    private var unreachable = false
    private val http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()

    suspend fun start(services: JSONArray) {
        val p = ProcessBuilder(binary, "--scenario", file.path).redirectError(ProcessBuilder.Redirect.INHERIT).start()
        process = p
        val out = p.inputStream.bufferedReader()
        val line = withContext(kotlinx.coroutines.Dispatchers.IO) { out.readLine() }
            ?: error("fake-remote-service printed nothing (exit ${p.waitFor()})")
        Thread { runCatching { out.readText() } }.apply { isDaemon = true }.start()
        val info = JSONObject(line)
        control = info.getInt("control")
        val hooks = info.getJSONArray("hooks")
        val reported = mutableListOf<String>()
        val loaded = loadRemote(hooks.toString()) { name, _ -> synchronized(reported) { reported.add(name) } }
        source = loaded
        check(reported.sorted() == (0 until hooks.length()).map { hooks.getJSONObject(it).getString("name") }.sorted()) {
            "remote: onHook reported $reported"
        }
        for ((i, h) in loaded.hooks().withIndex()) {
            val down = services.getJSONObject(i).optBoolean("unreachable", false)
            unreachable = unreachable || down
            val ready = h.state is HookState.Ready
            check(ready != down) { "remote: hook ${h.name} should be ${if (down) "down" else "ready"}: ${h.state}" }
        }
    }

    fun registerInto(client: Client) {
        source?.registerInto(client)
    }

    private fun send(method: String, path: String): String {
        val req = HttpRequest.newBuilder(URI("http://127.0.0.1:$control$path")).timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody()).build()
        val resp = http.send(req, HttpResponse.BodyHandlers.ofString())
        check(resp.statusCode() == 200) { "$method $path: ${resp.statusCode()} ${resp.body()}" }
        return resp.body()
    }

    fun bringUp() {
        if (unreachable) send("POST", "/_fake/up")
    }

    fun requests(): String = if (process == null) "[]" else send("GET", "/_fake/remote_requests")

    suspend fun close() {
        source?.let {
            it.shutdown()
            it.close()
        }
        source = null
        process?.let { p ->
            runCatching { p.outputStream.close() }
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly()
                p.waitFor(5, TimeUnit.SECONDS)
            }
        }
        process = null
    }
}

/** The most actions a stepped scenario's turn may take (a bound, not an expectation). */
private const val MAX_ACTIONS = 200

/** The fake model server, a child process that exits when its stdin closes (also StepperTest's). */
internal class FakeServer(private val process: Process, val port: Int) {
    fun baseUrl(style: String) = if (style.startsWith("openai")) "http://127.0.0.1:$port/v1" else "http://127.0.0.1:$port"

    fun requests(): String {
        val http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()
        val req = HttpRequest.newBuilder(URI("http://127.0.0.1:$port/_fake/requests")).timeout(Duration.ofSeconds(10)).GET().build()
        val resp = http.send(req, HttpResponse.BodyHandlers.ofString())
        check(resp.statusCode() == 200) { "GET /_fake/requests: ${resp.statusCode()}" }
        return resp.body()
    }

    fun stop() {
        runCatching { process.outputStream.close() }
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly()
            process.waitFor(5, TimeUnit.SECONDS)
        }
    }

    companion object {
        fun start(binary: String, file: File): FakeServer {
            val process = ProcessBuilder(binary, "--scenario", file.path)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start()
            try {
                val out = process.inputStream.bufferedReader()
                val line = out.readLine() ?: error("fake-model-server printed no port (exit ${process.waitFor()})")
                // keep draining whatever else it prints, so it never blocks on a full pipe
                Thread { runCatching { out.readText() } }.apply { isDaemon = true }.start()
                return FakeServer(process, line.trim().toInt())
            } catch (e: Throwable) {
                process.destroyForcibly()
                throw e
            }
        }
    }
}

/** A scenario's `prompt_parts` as a Kotlin host writes them: image data as a ByteArray. */
private fun kotlinParts(parts: JSONArray): List<PromptPart> = (0 until parts.length()).map { i ->
    val p = parts.getJSONObject(i)
    when {
        p.optString("type") == "text" -> PromptPart.Text(p.getString("text"))
        p.has("data") -> PromptPart.Image(
            java.util.Base64.getDecoder().decode(p.getString("data")),
            if (p.has("media_type")) p.getString("media_type") else null,
        )
        else -> PromptPart.ImagePath(p.getString("path"))
    }
}
