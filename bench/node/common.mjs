// The loop every side runs: warm up, then time each turn; print one JSON line.
export async function measure(sdk, turn) {
  const [, , baseUrl, turnsArg, warmupArg] = process.argv
  const turns = Number(turnsArg)
  const warmup = Number(warmupArg)
  const ctx = await turn.setup(baseUrl)
  for (let i = 0; i < warmup; i++) await turn.run(ctx)
  const samples = new Float64Array(turns)
  for (let i = 0; i < turns; i++) {
    const t0 = process.hrtime.bigint()
    await turn.run(ctx)
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000
  }
  await turn.teardown?.(ctx)
  samples.sort()
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length
  console.log(
    JSON.stringify({
      sdk,
      node: process.version,
      turns,
      medianUs: at(0.5),
      p90Us: at(0.9),
      meanUs: mean,
      maxRssKb: process.resourceUsage().maxRSS,
    }),
  )
}

export function check(ok, what) {
  if (!ok) throw new Error(`unexpected turn result: ${what}`)
}
