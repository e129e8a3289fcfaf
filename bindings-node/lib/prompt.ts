// A turn's prompt: a string, or text and image parts in order. The engine checks every part
// (an unknown type, data that is not base64 or is empty, bytes that are not an image, a path
// outside the root: a ConfigurationError naming the part, `prompt[1].data`); this file only
// turns image bytes into the base64 text the engine takes.

/** A prompt's text. */
export interface TextPart {
  type: 'text'
  text: string
}

/**
 * An image's bytes: a `Uint8Array` (a `Buffer` is one) or base64 text. `media_type`
 * (`image/png`, `image/jpeg`, `image/gif`, `image/webp`) may be left out: the engine reads it
 * from the bytes' signature and refuses one the bytes contradict.
 */
export interface ImageDataPart {
  type: 'image'
  data: Uint8Array | string
  media_type?: string
}

/**
 * An image file beneath the client's root: checked when the turn starts and read for each
 * request (PNG, JPEG, GIF or WebP by its bytes, at most 3.75 MiB).
 */
export interface ImagePathPart {
  type: 'image'
  path: string
}

/** One part of a prompt given as a list. */
export type PromptPart = TextPart | ImageDataPart | ImagePathPart

/** What `run` and `stream` take: a string, or text and image parts in order. */
export type Prompt = string | readonly PromptPart[]

/** `prompt` as the native module takes it: image bytes as base64 text, the rest as given. */
export function promptValue(prompt: Prompt): string | Array<Record<string, unknown>> {
  if (!Array.isArray(prompt)) return prompt as string
  return prompt.map((part: unknown) => {
    if (part === null || typeof part !== 'object') return part as Record<string, unknown>
    const fields = part as Record<string, unknown>
    const data = fields.data
    if (!(data instanceof Uint8Array)) return fields
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    return { ...fields, data: bytes.toString('base64') }
  })
}
