/** Resolves once `condition` holds, checking after each turn of the event loop; fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, { timeoutMs = 10_000, what = 'the condition' } = {}): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
