package contenox

import com.sun.net.httpserver.HttpServer
import java.net.InetSocketAddress
import java.net.ServerSocket
import java.util.concurrent.ConcurrentLinkedQueue
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * loadRemote through the Kotlin API: a loopback service (the JDK's HttpServer) with an OpenAPI
 * document, a hook with a secret header and an injected value, a scripted model calling its tool.
 */
@org.junit.jupiter.api.Timeout(60)
class RemoteTest {
    private val secret = "Bearer tok-9f8e7d6c5b4a"
    private val tenant = "tenant-3a2b1c0d"

    private val doc = JSONObject(
        """
        {"openapi": "3.0.0", "info": {"title": "greeter", "version": "1"},
         "paths": {"/greet/{who}": {"get": {"operationId": "greet", "parameters": [
           {"name": "who", "in": "path", "required": true, "schema": {"type": "string"}},
           {"name": "tenant", "in": "query", "schema": {"type": "string"}}]}}}}
        """,
    )

    /** (path, query, Authorization) of each call the service answered. */
    private val calls = ConcurrentLinkedQueue<Triple<String, String?, String?>>()

    private fun startService(): HttpServer {
        val server = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
        server.createContext("/") { ex ->
            val path = ex.requestURI.path
            val auth = ex.requestHeaders.getFirst("Authorization")
            val body = when {
                path == "/openapi.json" -> doc.toString()
                path.startsWith("/greet/") -> {
                    calls.add(Triple(path, ex.requestURI.query, auth))
                    // a service that echoes the secret: the model must not see it
                    JSONObject().put("hello", path.removePrefix("/greet/")).put("echo", auth).toString()
                }
                else -> null
            }
            if (body == null) {
                ex.sendResponseHeaders(404, -1)
            } else {
                val bytes = body.toByteArray()
                ex.responseHeaders.add("Content-Type", "application/json")
                ex.sendResponseHeaders(200, bytes.size.toLong())
                ex.responseBody.use { it.write(bytes) }
            }
            ex.close()
        }
        server.start()
        return server
    }

    private fun hooks(url: String) = JSONArray().put(
        JSONObject().put("name", "greeter").put("url", url)
            .put("headers", JSONObject().put("Authorization", secret))
            .put("inject", JSONObject().put("tenant", tenant)),
    ).toString()

    private fun neverShowsSecrets(vararg texts: String) {
        for (t in texts) {
            assertFalse(t.contains("tok-9f8e7d6c5b4a"), t)
            assertFalse(t.contains(tenant), t)
        }
    }

    private fun scripted(vararg entries: JSONObject) = JSONObject()
        .put("style", "scripted").put("builtins", JSONArray()).put("script", JSONArray(entries.toList())).toString()

    @Test
    fun `a hook is loaded and called, and its header and injected values never print`() = runBlocking {
        val server = startService()
        try {
            val reports = ConcurrentLinkedQueue<Pair<String, HookState>>()
            val source = loadRemote(hooks("http://127.0.0.1:${server.address.port}")) { n, s -> reports.add(n to s) }
            source.use {
                assertEquals(listOf("greeter" to HookState.Ready(1uL)), reports.toList())
                assertEquals(listOf(RemoteHookState("greeter", HookState.Ready(1uL))), source.hooks())
                val tool = source.tools().single()
                assertEquals("greet", tool.name())
                assertEquals(Source.REMOTE, tool.source())
                assertEquals("greeter", tool.server())
                // the injected parameter is hidden from the model
                assertFalse(JSONObject(tool.spec().inputSchemaJson).optJSONObject("properties")?.has("tenant") ?: false)
                neverShowsSecrets(source.toString(), source.hooks().toString(), tool.spec().toString())

                val call = JSONObject().put(
                    "tool_calls",
                    JSONArray().put(JSONObject().put("id", "c1").put("name", "greet").put("arguments", JSONObject().put("who", "bob"))),
                )
                Client(scripted(call, JSONObject().put("text", "done"))).use { client ->
                    source.registerInto(client)
                    assertEquals(listOf("greet"), client.tools().map { it.name })
                    val run = client.stream("greet bob")
                    val events = run.events().toList()
                    val result = run.result()
                    assertEquals(Outcome.DONE, result.outcome)
                    val r = events.filterIsInstance<Event.ToolResult>().single()
                    assertFalse(r.isError, r.content)
                    assertTrue(r.content.replace(" ", "").contains("\"hello\":\"bob\""), r.content)
                    // the service got the header and the injected value; its echo was scrubbed
                    assertEquals(listOf(Triple("/greet/bob", "tenant=$tenant", secret)), calls.toList())
                    neverShowsSecrets(events.joinToString { it.toJson() }, events.toString(), result.transcript.toJson())
                    source.shutdown()
                    assertTrue(source.isClosed())
                    assertEquals(emptyList<String>(), client.tools().map { it.name })
                }
            }
        } finally {
            server.stop(0)
        }
    }

    @Test
    fun `an unreachable hook is unavailable and invalid hooks are configuration errors`() = runBlocking {
        val port = ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()).use { it.localPort }
        loadRemote(hooks("http://127.0.0.1:$port")).use { source ->
            val state = source.hooks().single().state as HookState.Unavailable
            neverShowsSecrets(state.error, source.hooks().toString())
            assertEquals(emptyList<SourceTool>(), source.tools())
        }
        assertThrows<ContenoxException.Config> { runBlocking { loadRemote("""[{"name": "x", "url": "ftp://nowhere"}]""") } }
        assertThrows<ContenoxException.Config> { runBlocking { loadRemote("""[{"name": "x", "url": "http://127.0.0.1:1", "header": {}}]""") } }
        assertThrows<ContenoxException.Config> { runBlocking { loadRemote("""{"name": "x"}""") } }
        val bad = JSONArray().put(
            JSONObject().put("name", "x").put("url", "http://127.0.0.1:1").put("headers", JSONObject().put("Authorization", "$secret\n")),
        ).toString()
        val e = assertThrows<ContenoxException.Config> { runBlocking { loadRemote(bad) } }
        neverShowsSecrets(e.toString(), e.message ?: "", e.detail)
    }
}
