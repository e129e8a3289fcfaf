package contenox

import java.io.File
import java.nio.file.Files
import java.nio.file.Path
import java.util.Locale
import java.util.UUID
import java.util.concurrent.ConcurrentLinkedQueue
import kotlin.random.Random
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * MCP through the Kotlin API against the project's Python test server (tests/mcp/fast_server.py,
 * installed by tests/mcp/install.sh), and the client's background shells. The process checks
 * read /proc, as core's MCP tests do: every server this test starts carries a tag in its
 * environment, and "stopped" means no process (not even a zombie) is left in its process group.
 */
@org.junit.jupiter.api.Timeout(120)
class McpTest {
    private val root: Path = Files.createTempDirectory("contenox-kt-mcp")
    private val repo = File(System.getProperty("contenox.repo") ?: "../..").canonicalFile

    /** The environment tag of this test's servers. */
    private val tag = UUID.randomUUID().toString()

    @AfterEach
    fun cleanup(info: org.junit.jupiter.api.TestInfo) {
        root.toFile().deleteRecursively()
        // whatever a test did, none of its servers may outlive it
        val left = taggedGroups().associateWith { members(it) }
        if (left.isNotEmpty()) {
            val what = left.values.flatten().map { (pid, state) -> "$pid ($state) ${cmdline(pid)}" }
            left.values.flatten().forEach { ProcessHandle.of(it.first.toLong()).ifPresent { p -> p.destroyForcibly() } }
            error("MCP server processes outlived the test ${info.displayName}: $what")
        }
    }

    private fun installed(f: File, what: String): String {
        check(f.exists()) { "$what not found at ${f.path}: run tests/mcp/install.sh" }
        return f.path
    }

    private fun python(): String =
        System.getenv("CONTENOX_MCP_PYTHON") ?: installed(File(repo, "tests/mcp/.venv/bin/python"), "the MCP venv")

    /** An `mcpServers` entry of the fast test server over stdio, tagged, with extra env. */
    private fun fast(vararg env: Pair<String, String>): JSONObject {
        val e = JSONObject().put("CONTENOX_KT_TEST_TAG", tag)
        env.forEach { (k, v) -> e.put(k, v) }
        return JSONObject()
            .put("command", python())
            .put("args", JSONArray(listOf(installed(File(repo, "tests/mcp/fast_server.py"), "fast_server.py"))))
            .put("env", e)
    }

    private fun mcpConfig(vararg servers: Pair<String, JSONObject>): String {
        val s = JSONObject()
        servers.forEach { (name, entry) -> s.put(name, entry) }
        return JSONObject().put("mcpServers", s).toString()
    }

    private fun scripted(vararg entries: JSONObject, extra: JSONObject = JSONObject()): String {
        val cfg = JSONObject()
            .put("style", "scripted")
            .put("script", JSONArray(entries.toList()))
            .put("builtins", JSONArray())
            .put("root", root.toString())
        for (key in extra.keySet()) cfg.put(key, extra.get(key))
        return cfg.toString()
    }

    private fun calls(vararg c: Triple<String, String, JSONObject>) = JSONObject().put(
        "tool_calls",
        JSONArray(c.map { (id, name, args) -> JSONObject().put("id", id).put("name", name).put("arguments", args) }),
    )

    private fun text(t: String) = JSONObject().put("text", t)

    // ---- /proc ----------------------------------------------------------------------------

    private fun assumeProc() = assumeTrue(File("/proc/self/cmdline").exists(), "needs /proc")

    /** Live processes whose command line holds `marker` (a zombie's is empty). */
    private fun pidsRunning(marker: String): List<Int> {
        val self = ProcessHandle.current().pid().toInt()
        return File("/proc").listFiles()!!.mapNotNull { dir ->
            val pid = dir.name.toIntOrNull()?.takeIf { it != self } ?: return@mapNotNull null
            val cmd = runCatching { File(dir, "cmdline").readText(Charsets.ISO_8859_1) }.getOrNull()
            pid.takeIf { cmd != null && cmd.contains(marker) }
        }
    }

    private suspend fun waitUntil(what: String, cond: () -> Boolean) {
        val deadline = System.nanoTime() + 10_000_000_000L
        while (!cond()) {
            check(System.nanoTime() < deadline) { "timed out waiting: $what" }
            delay(20)
        }
    }

    /** (pid, state, pgrp) of every process. */
    private fun processes(): List<Triple<Int, Char, Int>> =
        File("/proc").listFiles()!!.mapNotNull { dir ->
            val pid = dir.name.toIntOrNull() ?: return@mapNotNull null
            val stat = runCatching { File(dir, "stat").readText() }.getOrNull() ?: return@mapNotNull null
            // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'
            val fields = stat.substring(stat.lastIndexOf(')') + 1).trim().split(' ')
            Triple(pid, fields[0][0], fields[2].toInt())
        }

    private fun cmdline(pid: Int) =
        runCatching { File("/proc/$pid/cmdline").readText().replace('\u0000', ' ').trim() }.getOrDefault("?")

    private fun members(pgid: Int) = processes().filter { it.third == pgid }.map { it.first to it.second }

    /** The process groups of the live processes whose environment carries this test's tag. */
    private fun taggedGroups(): Set<Int> = processes().filter { (pid, _, _) ->
        val env = runCatching { File("/proc/$pid/environ").readBytes() }.getOrNull() ?: return@filter false
        String(env, Charsets.UTF_8).split('\u0000').contains("CONTENOX_KT_TEST_TAG=$tag")
    }.map { it.third }.toSet()

    /** Wait until no process (not even a zombie) is left in any of `groups`. */
    private suspend fun waitGone(groups: Set<Int>) {
        val deadline = System.nanoTime() + 10_000_000_000L
        while (true) {
            val left = groups.associateWith { members(it) }.filterValues { it.isNotEmpty() }
            if (left.isEmpty()) return
            check(System.nanoTime() < deadline) { "server processes outlived the shutdown: $left" }
            delay(50)
        }
    }

    /** Load one tagged fast server, check it runs in its own process group, return both. */
    private suspend fun loadOne(): Pair<McpSource, Set<Int>> {
        val source = loadMcp(mcpConfig("fast" to fast()))
        assertTrue(source.servers().single().state is ServerState.Ready, source.servers().toString())
        val groups = taggedGroups()
        assertEquals(1, groups.size, "one server process group: $groups")
        return source to groups
    }

    // ---- tests ----------------------------------------------------------------------------

    @Test
    fun `loadMcp reports a failing server as failed while the other is ready, and its tools work`() = runBlocking {
        val reports = ConcurrentLinkedQueue<Pair<String, ServerState>>()
        val source = loadMcp(
            mcpConfig("fast" to fast(), "broken" to fast("FAIL_AT_START" to "broken on purpose")),
        ) { name, state -> reports.add(name to state) }
        source.use {
            // every server was reported before loadMcp returned, and servers() says the same
            assertEquals(setOf("fast", "broken"), reports.map { it.first }.toSet())
            assertEquals(listOf("broken", "fast"), source.servers().map { it.name })
            val states = source.servers().associate { it.name to it.state }
            assertEquals(reports.toMap(), states)
            val broken = states.getValue("broken") as ServerState.Failed
            // The server printed its `env` value to stderr: the tail shows, the value does not
            // (a server's env values are secrets, like its tokens).
            assertTrue(broken.error.contains("server stderr"), "the stderr tail: ${broken.error}")
            assertTrue(broken.error.contains("[redacted]"), "the stderr tail: ${broken.error}")
            assertFalse(broken.error.contains("broken on purpose"), "the stderr tail: ${broken.error}")
            val ready = states.getValue("fast") as ServerState.Ready

            val tools = source.tools()
            assertEquals(ready.tools, tools.size.toULong())
            assertTrue(tools.all { it.name().startsWith("fast__") && it.source() == Source.MCP && it.server() == "fast" })
            val lookup = tools.single { it.name() == "fast__lookup" }
            assertEquals(true, lookup.spec().hints.readOnly)
            assertEquals(false, lookup.spec().hints.destructive)
            assertTrue(JSONObject(lookup.spec().inputSchemaJson).getJSONObject("properties").has("key"))
            assertEquals(
                listOf("list_mcp_resources", "read_mcp_resource"),
                source.resourceTools().map { it.name() },
            )

            // a turn calls it through the gate, which sees an MCP call of server "fast"
            val gate = ConcurrentLinkedQueue<ToolCallEvent>()
            val hooks = object : Hooks {
                override suspend fun beforeTool(call: ToolCallEvent): Decision {
                    gate.add(call)
                    return Decision.Allow
                }
                override suspend fun afterTool(call: ToolCallEvent, result: ToolOutput): ToolOutput? = null
            }
            Client(
                scripted(
                    calls(Triple("c1", "fast__lookup", JSONObject().put("key", "k1"))),
                    text("done"),
                ),
                hooks = hooks,
            ).use { client ->
                source.registerInto(client)
                source.resourceTools().forEach { client.register(it) }
                val names = client.tools().map { it.name }
                assertTrue(names.containsAll(tools.map { it.name() } + "list_mcp_resources"), names.toString())
                val run = client.stream("look k1 up")
                val result = run.events().toList().filterIsInstance<Event.ToolResult>().single()
                assertEquals(Outcome.DONE, run.result().outcome)
                assertFalse(result.isError, result.content)
                assertTrue(result.content.contains("value of k1"), result.content)
                val seen = gate.single()
                assertEquals(Source.MCP, seen.source)
                assertEquals("fast", seen.server)
                assertEquals(true, seen.hints.readOnly)
            }
            source.shutdown()
        }
    }

    @Test
    fun `shutting down the client stops the servers registered into it`() = runBlocking {
        val (source, groups) = loadOne()
        source.use {
            val client = Client(scripted(text("hi")))
            client.use {
                source.registerInto(client)
                client.shutdown()
                waitGone(groups)
                assertTrue(source.isClosed())
                assertTrue(client.isClosed())
            }
        }
    }

    @Test
    fun `freeing the client stops the servers registered into it`() = runBlocking {
        val (source, groups) = loadOne()
        source.use {
            val client = Client(scripted(text("hi")))
            source.registerInto(client)
            client.close() // frees the object, which shuts the client down
            waitGone(groups)
            assertTrue(source.isClosed())
        }
    }

    @Test
    fun `shutdown of the source stops its servers and removes its tools`() = runBlocking {
        val (source, groups) = loadOne()
        Client(scripted(text("hi"))).use { client ->
            source.use {
                source.registerInto(client)
                assertTrue(client.tools().any { it.name == "fast__lookup" })
                source.shutdown()
                waitGone(groups)
                assertTrue(source.isClosed())
                assertTrue(client.tools().none { it.name.startsWith("fast__") })
                source.shutdown() // idempotent
            }
            assertFalse(client.isClosed())
        }
    }

    @Test
    fun `freeing the source kills its servers`() = runBlocking {
        val (source, groups) = loadOne()
        val tool = source.tools().first()
        source.close() // frees it: the servers are killed at once
        waitGone(groups)
        // a tool kept beyond its source answers with an error result, it does not crash
        Client(scripted(calls(Triple("c1", tool.name(), JSONObject().put("key", "x"))), text("ok"))).use { client ->
            client.register(tool)
            val run = client.stream("go")
            val result = run.events().toList().filterIsInstance<Event.ToolResult>().single()
            assertTrue(result.isError, result.content)
            assertEquals(Outcome.DONE, run.result().outcome)
        }
        tool.close()
    }

    @Test
    fun `a listener that throws is ignored and the load goes on`() = runBlocking {
        val heard = ConcurrentLinkedQueue<String>()
        // a program that does not exist: failed at once, no process started
        val config = mcpConfig(
            "a" to JSONObject().put("command", "/nonexistent/contenox-mcp-server"),
            "b" to JSONObject().put("command", "/nonexistent/contenox-mcp-server"),
        )
        loadMcp(config) { name, _ ->
            heard.add(name)
            throw IllegalStateException("listener failed")
        }.use { source ->
            assertEquals(listOf("a", "b"), heard.sorted())
            val states = source.servers().map { it.state }
            assertTrue(states.all { it is ServerState.Failed && it.error.contains("cannot start") }, states.toString())
            assertEquals(emptyList<SourceTool>(), source.tools())
        }
    }

    @Test
    fun `an invalid MCP config throws ContenoxException Config`() {
        runBlocking {
            assertThrows<ContenoxException.Config> { loadMcp("not json") }
            assertThrows<ContenoxException.Config> { loadMcp("""{"servers": {}}""") }
            assertThrows<ContenoxException.Config> {
                loadMcp("""{"mcpServers": {"x": {"command": "true", "typo": 1}}}""")
            }
        }
    }

    @Test
    fun `background shells are listed with their status`() = runBlocking {
        val bash = JSONObject().put("command", "sleep 0.2; exit 3").put("run_in_background", true)
        val extra = JSONObject().put("builtins", JSONArray(listOf("bash"))).put("background", true)
        Client(scripted(calls(Triple("c1", "bash", bash)), text("started"), extra = extra)).use { client ->
            val shells = client.backgroundShells()!!
            assertEquals(emptyList<String>(), shells.ids())
            assertEquals(Outcome.DONE, client.run("start it").outcome)
            assertEquals(listOf("shell_1"), shells.ids())
            val deadline = System.nanoTime() + 10_000_000_000L
            while (shells.status("shell_1") == "running" && System.nanoTime() < deadline) delay(20)
            assertEquals("exited 3", shells.status("shell_1"))
            assertNull(shells.status("shell_9"))
            assertNull(shells.status("nonsense"))
            // another handle sees the same shells
            assertEquals(listOf("shell_1"), client.backgroundShells()!!.ids())
        }
        // without `background`, there are none
        Client(scripted(text("hi"), extra = JSONObject().put("builtins", JSONArray(listOf("bash"))))).use { client ->
            assertNull(client.backgroundShells())
        }
    }

    @Test
    fun `closeAll kills the shells' processes and keeps the client open`() = runBlocking {
        assumeProc()
        // a command that runs until killed, with a marker unique to its processes
        val marker = String.format(Locale.ROOT, "%.9f", 300 + Random.nextDouble())
        val bash = JSONObject().put("command", "sleep $marker; echo never").put("run_in_background", true)
        val extra = JSONObject().put("builtins", JSONArray(listOf("bash"))).put("background", true)
        val script = scripted(calls(Triple("c1", "bash", bash)), text("started"), text("still open"), extra = extra)
        Client(script).use { client ->
            assertEquals(Outcome.DONE, client.run("start it").outcome)
            val shells = client.backgroundShells()!!
            assertEquals(listOf("shell_1"), shells.ids())
            waitUntil("the sleeper runs") { pidsRunning(marker).isNotEmpty() }
            assertEquals("running", shells.status("shell_1"))

            shells.closeAll()
            waitUntil("the sleeper is gone") { pidsRunning(marker).isEmpty() }
            waitUntil("shell_1 reads killed") { shells.status("shell_1") == "killed" }
            shells.closeAll() // idempotent
            assertEquals(listOf("shell_1"), shells.ids())
            assertFalse(client.isClosed())
            assertEquals(Outcome.DONE, client.run("again").outcome)
        }
    }

    @Test
    fun `host-made shells are shared by clients and shutdown ends only what its turns started`() = runBlocking {
        assumeProc()
        val shells = BackgroundShells()
        assertEquals(emptyList<String>(), shells.ids())
        val (ma, mb) = List(2) { String.format(Locale.ROOT, "%.9f", 300 + Random.nextDouble()) }
        fun sharing(marker: String): Client {
            val bash = JSONObject().put("command", "sleep $marker; echo never").put("run_in_background", true)
            val extra = JSONObject().put("builtins", JSONArray(listOf("bash")))
            return Client(scripted(calls(Triple("c1", "bash", bash)), text("started"), extra = extra), backgroundShells = shells)
        }
        sharing(ma).use { a ->
            sharing(mb).use { b ->
                assertEquals(Outcome.DONE, a.run("start").outcome)
                assertEquals(Outcome.DONE, b.run("start").outcome)
                assertEquals(listOf("shell_1", "shell_2"), shells.ids())
                assertEquals(shells.ids(), a.backgroundShells()!!.ids()) // the same shells
                waitUntil("both sleepers run") { pidsRunning(ma).isNotEmpty() && pidsRunning(mb).isNotEmpty() }
                a.shutdown()
                waitUntil("a's sleeper is gone") { pidsRunning(ma).isEmpty() }
                assertTrue(pidsRunning(mb).isNotEmpty(), "shutting a down killed b's shell")
                assertEquals("running", shells.status("shell_2"))
                shells.closeAll() // the host's shutdown
                waitUntil("b's sleeper is gone") { pidsRunning(mb).isEmpty() }
                waitUntil("shell_2 reads killed") { shells.status("shell_2") == "killed" }
                assertFalse(b.isClosed())
            }
        }
    }

    @Test
    fun `shutting the client down kills its shells, which stay readable`() = runBlocking {
        assumeProc()
        val marker = String.format(Locale.ROOT, "%.9f", 300 + Random.nextDouble())
        val bash = JSONObject().put("command", "sleep $marker; echo never").put("run_in_background", true)
        val extra = JSONObject().put("builtins", JSONArray(listOf("bash"))).put("background", true)
        Client(scripted(calls(Triple("c1", "bash", bash)), text("started"), extra = extra)).use { client ->
            assertEquals(Outcome.DONE, client.run("start it").outcome)
            val shells = client.backgroundShells()!!
            waitUntil("the sleeper runs") { pidsRunning(marker).isNotEmpty() }
            client.shutdown()
            waitUntil("the sleeper is gone") { pidsRunning(marker).isEmpty() }
            waitUntil("shell_1 reads killed") { shells.status("shell_1") == "killed" }
            assertEquals(listOf("shell_1"), client.backgroundShells()!!.ids())
        }
    }

    /** tests/mcp/oauth_server.py (the MCP Python SDK's authorization server and protected server) on a free port. */
    private fun startVault(): Pair<Process, Int> {
        val port = java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()).use { it.localPort }
        val process = ProcessBuilder(python(), installed(File(repo, "tests/mcp/oauth_server.py"), "oauth_server.py"), port.toString())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start()
        val deadline = System.nanoTime() + 20_000_000_000L
        while (true) {
            val up = runCatching { java.net.Socket("127.0.0.1", port).close() }.isSuccess
            if (up) break
            check(System.nanoTime() < deadline) { "oauth_server.py did not listen" }
            Thread.sleep(50)
        }
        return process to port
    }

    /** The host's part: tokens in a map, a "browser" that follows the URL and hands back the redirect. */
    private class HostAuth : McpAuth {
        val store = java.util.concurrent.ConcurrentHashMap<String, String>()
        val saved = ConcurrentLinkedQueue<String>()
        val urls = ConcurrentLinkedQueue<String>()
        override fun redirectUri() = "http://127.0.0.1:9/callback"
        override suspend fun authorize(server: String, url: String): String {
            urls.add(url)
            val conn = java.net.URI(url).toURL().openConnection() as java.net.HttpURLConnection
            conn.instanceFollowRedirects = false
            try {
                return conn.getHeaderField("Location") ?: error("no redirect: HTTP ${conn.responseCode}")
            } finally {
                conn.disconnect()
            }
        }
        override suspend fun load(key: String): String? = store[key]
        override suspend fun save(key: String, value: String) {
            store[key] = value
            saved.add(value)
        }
        fun tokens(): List<String> = saved.flatMap { v ->
            val d = JSONObject(v)
            listOf("access_token", "refresh_token").mapNotNull { d.optString(it).ifEmpty { null } }
        }
    }

    @Test
    fun `an OAuth-protected server loads after the authorization callback, refreshes, re-authorizes, and no token shows`() = runBlocking {
        val (vault, port) = startVault()
        val auth = HostAuth()
        val shown = mutableListOf<String>()
        try {
            val config = mcpConfig("vault" to JSONObject().put("type", "http").put("url", "http://127.0.0.1:$port/mcp"))
            loadMcp(config, auth = auth).use { source ->
                assertEquals(listOf("vault__vault_sum"), source.tools().map { it.name() })
                assertEquals(1, auth.urls.size)
                assertTrue(auth.urls.single().contains("code_challenge_method=S256"))
                shown.add(source.servers().toString())
                // One client for the three turns: shutting a client down stops the servers registered into it.
                val sum = calls(Triple("c1", "vault__vault_sum", JSONObject().put("a", 40).put("b", 2)))
                Client(scripted(sum, text("done"), sum, text("done"), sum, text("done"))).use { client ->
                    source.registerInto(client)
                    for (step in listOf("first", "expire", "revoke")) {
                        if (step != "first") {
                            val c = java.net.URI("http://127.0.0.1:$port/_test/$step").toURL().openConnection() as java.net.HttpURLConnection
                            c.requestMethod = "POST"
                            assertEquals(200, c.responseCode)
                            c.disconnect()
                        }
                        val run = client.stream("add")
                        val events = run.events().toList()
                        val result = events.filterIsInstance<Event.ToolResult>().single()
                        assertTrue(result.content.contains("vault says 42"), "$step: ${result.content}")
                        shown.addAll(events.map { it.toJson() })
                        shown.add(client.transcript().toJson())
                    }
                }
                assertEquals(2, auth.urls.size, "the revoked token needed a new authorization")
                source.shutdown()
            }
        } finally {
            vault.destroyForcibly()
            vault.waitFor()
        }
        val tokens = auth.tokens()
        assertTrue(tokens.size >= 4)
        for (text in shown) for (token in tokens) assertFalse(text.contains(token), "a token was shown")
    }

    @Test
    fun `a browser step that throws fails the server with the reason`() = runBlocking {
        val (vault, port) = startVault()
        try {
            val auth = object : McpAuth {
                override fun redirectUri() = "http://127.0.0.1:9/callback"
                override suspend fun authorize(server: String, url: String): String =
                    throw ContenoxException.Host("the person closed the browser")
                override suspend fun load(key: String): String? = null
                override suspend fun save(key: String, value: String) = error("nothing to save")
            }
            val config = mcpConfig("vault" to JSONObject().put("type", "http").put("url", "http://127.0.0.1:$port/mcp"))
            loadMcp(config, auth = auth).use { source ->
                assertTrue(source.tools().isEmpty())
                val failed = source.servers().single().state as ServerState.Failed
                assertTrue(failed.error.contains("the person closed the browser"), failed.error)
                source.shutdown()
            }
        } finally {
            vault.destroyForcibly()
            vault.waitFor()
        }
    }

}
