package contenox

/** The text parts of a message's content, joined. */
internal fun textOf(parts: List<ContentPart>): String =
    parts.filterIsInstance<ContentPart.Text>().joinToString("") { it.text }

/** A tool result's text. */
internal val Message.Tool.text: String
    get() = textOf(content)
