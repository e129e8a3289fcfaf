package contenox

import java.nio.file.Files
import java.nio.file.Path
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * Approval policies through the Kotlin API (config `policy`, `setPolicy`, `policyJson`,
 * [Policies]) and the options beside them (ceilings, timeouts, `shell_env`, `sandbox`), each
 * checked by the engine and named as the config JSON spells it.
 */
@org.junit.jupiter.api.Timeout(60)
class PolicyTest {
    private val root: Path = Files.createTempDirectory("contenox-kt-policy")

    @AfterEach
    fun cleanup() {
        root.toFile().deleteRecursively()
    }

    private val echo = hostTool(
        ToolSpec("echo", "Echo the text.", """{"type":"object"}""", Hints(readOnly = true), Tier.CORE),
    ) { args, _ -> ToolOutput(content = JSONObject(args).getString("text"), isError = false, metadataJson = null) }

    private fun call(id: String, text: String = id) = JSONObject().put(
        "tool_calls",
        JSONArray().put(JSONObject().put("id", id).put("name", "echo").put("arguments", JSONObject().put("text", text))),
    )

    private fun denyEcho(name: String = "no echo") = JSONObject()
        .put("version", 1)
        .put("default_action", "allow")
        .put("rules", JSONArray().put(JSONObject().put("tool", "echo").put("action", "deny").put("name", name)))

    private fun config(vararg entries: JSONObject, extra: JSONObject = JSONObject()): String {
        val cfg = JSONObject()
            .put("style", "scripted")
            .put("script", JSONArray(entries.toList()))
            .put("builtins", JSONArray())
            .put("root", root.toString())
        for (key in extra.keySet()) cfg.put(key, extra.get(key))
        return cfg.toString()
    }

    private fun client(vararg entries: JSONObject, extra: JSONObject = JSONObject()) =
        Client(config(*entries, extra = extra), listOf(echo))

    /** One turn; the result of call `id`. */
    private suspend fun turn(client: Client, id: String): Message.Tool {
        val result = client.run("go")
        assertEquals(Outcome.DONE, result.outcome)
        return result.transcript.messages().filterIsInstance<Message.Tool>().single { it.callId == id }
    }

    private fun sameDocument(expected: JSONObject, json: String?) =
        assertTrue(expected.similar(JSONObject(json!!)), "$json is not $expected")

    @Test
    fun `config policy takes a document, its JSON text or a file path`() = runBlocking {
        val file = root.resolve("policy.json")
        Files.writeString(file, denyEcho().toString())
        for (policy in listOf<Any>(denyEcho(), denyEcho().toString(), file.toString())) {
            client(call("c1"), JSONObject().put("text", "ok"), extra = JSONObject().put("policy", policy)).use { c ->
                val result = turn(c, "c1")
                assertTrue(result.isError, result.text)
                assertTrue(result.text.contains("rules[0] (\"no echo\")"), result.text)
                assertTrue(
                    result.text.endsWith("please ask for clarification or try a different, less destructive approach."),
                    result.text,
                )
                sameDocument(denyEcho(), c.policyJson())
            }
        }
    }

    @Test
    fun `setPolicy replaces it for the next call and null removes it`() = runBlocking {
        val ok = JSONObject().put("text", "ok")
        client(call("c1"), ok, call("c2"), ok, call("c3"), ok, extra = JSONObject().put("policy", denyEcho())).use { c ->
            assertTrue(turn(c, "c1").isError)
            val allow = """{"default_action": "allow", "rules": [{"tool": "echo", "action": "allow"}]}"""
            c.setPolicy(allow)
            sameDocument(JSONObject(allow), c.policyJson())
            val second = turn(c, "c2")
            assertEquals("c2", second.text)
            assertFalse(second.isError)
            c.setPolicy(null)
            assertNull(c.policyJson())
            assertFalse(turn(c, "c3").isError)
        }
    }

    @Test
    fun `a bad policy is refused and the old one stays`() = runBlocking {
        val cases = listOf(
            """{"rules": [{"tool": "echo", "action": "maybe"}]}""" to "rules[0].action",
            """{"rules": [{"action": "approve", "on_timeout": "allow"}]}""" to "rules[0].on_timeout",
            """{"version": 2}""" to "newer",
            """{"rules": [""" to "not valid JSON",
            "/nonexistent/policy.json" to "/nonexistent/policy.json",
        )
        for ((bad, says) in cases) {
            client(call("c1"), JSONObject().put("text", "ok"), extra = JSONObject().put("policy", denyEcho("old"))).use { c ->
                val e = assertThrows<ContenoxException.Config> { c.setPolicy(bad) }
                assertEquals("policy", e.option)
                assertTrue(e.detail.contains(says), e.detail)
                sameDocument(denyEcho("old"), c.policyJson())
                assertTrue(turn(c, "c1").text.contains("rules[0] (\"old\")"))
            }
            val created = assertThrows<ContenoxException.Config> {
                client(JSONObject().put("text", "x"), extra = JSONObject().put("policy", bad))
            }
            assertEquals("policy", created.option)
            assertTrue(created.detail.contains(says), created.detail)
        }
        val number = assertThrows<ContenoxException.Config> {
            client(JSONObject().put("text", "x"), extra = JSONObject().put("policy", 42))
        }
        assertTrue(number.detail.contains("got 42"), number.detail)
    }

    @Test
    fun `the presets are the engine's documents`() = runBlocking {
        assertEquals("approve", JSONObject(Policies.default()).getString("default_action"))
        assertEquals("deny", JSONObject(Policies.strict()).getString("default_action"))
        assertEquals("allow", JSONObject(Policies.dev()).getString("default_action"))
        assertThrows<ContenoxException.Config> { policyPreset("lax") }

        Files.writeString(root.resolve("notes.txt"), "hello\n")
        Files.createDirectories(root.resolve(".ssh"))
        Files.writeString(root.resolve(".ssh/id_ed25519"), "PRIVATE KEY\n")
        fun read(id: String, path: String) = JSONObject().put(
            "tool_calls",
            JSONArray().put(JSONObject().put("id", id).put("name", "read").put("arguments", JSONObject().put("path", path))),
        )
        val cfg = JSONObject(config(read("c1", "notes.txt"), read("c2", ".ssh/id_ed25519"), JSONObject().put("text", "done")))
            .put("builtins", JSONArray().put("read"))
            .put("policy", JSONObject(Policies.default()))
        Client(cfg.toString()).use { c ->
            val result = c.run("read them")
            val (notes, key) = result.transcript.messages().filterIsInstance<Message.Tool>()
            assertTrue(notes.text.contains("hello") && !notes.isError, notes.text)
            assertTrue(key.isError && key.text.contains("The approval policy denied read"), key.text)
            assertFalse(key.text.contains("PRIVATE KEY"))
        }
        // Given to setPolicy as it is.
        client(JSONObject().put("text", "x")).use { c ->
            c.setPolicy(Policies.strict())
            assertEquals("deny", JSONObject(c.policyJson()!!).getString("default_action"))
        }
    }

    @Test
    fun `gate events name the rule and ceilings end the turn with BUDGET`() = runBlocking {
        client(call("c1"), JSONObject().put("text", "ok"), extra = JSONObject().put("policy", denyEcho())).use { c ->
            val gate = c.streamFlow("go").toList().filterIsInstance<Event.Gate>().single()
            assertEquals(GateVerdict.DENY, gate.decision)
            assertEquals("rules[0] (\"no echo\")", gate.rule)
            assertTrue(gate.toJson().contains("\"rule\""), gate.toJson())
        }
        val two = JSONObject().put(
            "tool_calls",
            JSONArray()
                .put(JSONObject().put("id", "c1").put("name", "echo").put("arguments", JSONObject().put("text", "a")))
                .put(JSONObject().put("id", "c2").put("name", "echo").put("arguments", JSONObject().put("text", "b"))),
        )
        client(two, JSONObject().put("text", "never"), extra = JSONObject().put("max_tool_calls", 1)).use { c ->
            val result = c.run("go")
            assertEquals(Outcome.BUDGET, result.outcome)
            assertEquals("budget", outcomeName(result.outcome))
            assertTrue(result.error!!.contains("max_tool_calls"), result.error)
            val (first, second) = result.transcript.messages().filterIsInstance<Message.Tool>()
            assertEquals("a", first.text)
            assertTrue(second.isError && second.text.startsWith("budget reached"), second.text)
        }
    }

    @Test
    fun `the options beside the policy are checked in the config JSON's names`() {
        fun refused(extra: JSONObject) = assertThrows<ContenoxException.Config> {
            client(JSONObject().put("text", "x"), extra = extra)
        }
        for (name in listOf("request_timeout_ms", "idle_timeout_ms", "max_tool_calls", "max_turn_tokens")) {
            val e = refused(JSONObject().put(name, 0))
            assertEquals(name, e.option)
            assertEquals("0", e.value)
        }
        val env = refused(JSONObject().put("shell_env", JSONArray().put("LANG").put("*")))
        assertEquals("shell_env[1]", env.option)
        val secret = refused(JSONObject().put("shell_env", JSONArray().put("A*=s3cret")))
        assertEquals("\"A*=<redacted>\"", secret.value)
        assertFalse(secret.detail.contains("s3cret"), secret.detail)
        val dir = refused(JSONObject().put("sandbox", JSONObject().put("writable", JSONArray().put("relative/dir"))))
        assertEquals("sandbox.writable[0]", dir.option)
        val fine = JSONObject()
            .put("request_timeout_ms", 1000)
            .put("idle_timeout_ms", 2000)
            .put("shell_env", JSONArray().put("LANG").put("MODE=test"))
            .put("sandbox", JSONObject().put("network", false).put("writable", JSONArray().put("/var/cache/build")))
            .put("web_fetch_allow_private", true)
            .put("tool_concurrency", "all")
            .put("max_concurrent_tools", 2)
            .put("stream_tools", false)
        client(JSONObject().put("text", "x"), extra = fine).use { c ->
            val cfg = JSONObject(c.configJson())
            assertEquals(1000, cfg.getInt("request_timeout_ms"))
            assertFalse(cfg.getJSONObject("sandbox").getBoolean("network"))
            assertTrue(cfg.getBoolean("web_fetch_allow_private"))
            assertEquals("all", cfg.getString("tool_concurrency"))
            assertEquals(2, cfg.getInt("max_concurrent_tools"))
            assertFalse(cfg.getBoolean("stream_tools"))
        }
        assertEquals("max_concurrent_tools", refused(JSONObject().put("max_concurrent_tools", 0)).option)
        assertEquals("tool_concurrency", refused(JSONObject().put("tool_concurrency", "sometimes")).option)
    }
}
