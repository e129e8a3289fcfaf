// A turn stepped by its host (`client.step`): each model request, tool call and ask is handed out
// as an action; the host performs it (or answers the ask), and the stepper keeps each result in
// its journal, which a durable engine would record. A second client, given the same start and the
// journal, steps the same turn again without any I/O: no model request, the tool not run again.
import { createClient, tool, type ActionResult } from 'contenox'

let saves = 0

const save = tool({
  name: 'save',
  description: 'Save a note.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  // The idempotency key (`turnId:callId`) is the same when a turn is replayed: a tool with side
  // effects can make its work conditional on it.
  execute: ({ text }: { text: string }, { idempotencyKey }) => {
    saves += 1
    return `saved ${JSON.stringify(text)} under ${idempotencyKey.split(':')[1]}`
  },
})

const makeClient = () =>
  createClient({
    style: 'scripted',
    builtins: [],
    tools: [save],
    policy: { version: 1, default_action: 'allow', rules: [{ tool: 'save', action: 'approve', timeout_s: 600 }] },
    script: [{ toolCalls: [{ id: 'c1', name: 'save', args: { text: 'hello' } }] }, { text: 'Saved the note.' }],
  })

const first = makeClient()
const replayer = makeClient()
try {
  const stepper = first.step('Save the note "hello".')
  for (;;) {
    const action = await stepper.next()
    if (action.kind === 'done') {
      console.log(`done: ${action.result.finalText}`)
      break
    }
    if (action.kind === 'ask') {
      // A real host would ask a person (maybe days later, in another process).
      stepper.feed({ kind: 'answer', callId: action.request.callId, answer: { approve: true } })
      console.log(`  ask ${action.request.name}: approved`)
    } else {
      await stepper.perform()
      console.log(`  ${action.kind} ${action.kind === 'tool_call' ? action.call.name : action.step}`)
    }
  }

  // Another process: the same start (turn id, clock) and the recorded results, as JSON.
  const start = JSON.parse(JSON.stringify(stepper.options()))
  const recorded = JSON.parse(JSON.stringify(stepper.journal())) as ActionResult[]
  const replay = replayer.step('Save the note "hello".', start)
  for (const result of recorded) {
    await replay.next()
    replay.feed(result)
  }
  const done = await replay.next()
  if (done.kind !== 'done') throw new Error(`the replay wants more: ${done.kind}`)
  console.log(`replayed: ${recorded.length} results, ${done.result.finalText} (save ran ${saves} time in all)`)
} finally {
  first.close()
  replayer.close()
}
