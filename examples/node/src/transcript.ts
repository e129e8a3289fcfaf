// Save a conversation, load it into a new client, and go on where it stopped.
import { createClient, Transcript } from 'contenox'

const first = createClient({ style: 'scripted', builtins: [], script: [{ text: 'Nice to meet you, Ada.' }] })
await first.run('My name is Ada.')
const saved: string = JSON.stringify(first.transcript) // core's document: the same in every binding
first.close()

const second = createClient({ style: 'scripted', builtins: [], script: [{ text: 'Your name is Ada.' }] })
second.setTranscript(Transcript.fromJSON(saved))
const result = await second.run('What is my name?')
console.log(`${result.outcome}: ${result.finalText} (${result.transcript.length} messages)`)
second.close()
