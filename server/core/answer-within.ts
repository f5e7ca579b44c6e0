/**
 * `call`, or a rejection once `timeoutMs` have passed without its answer: for clients that queue
 * commands while their server is away instead of failing them.
 */
export function answerWithin<T>(call: Promise<T>, timeoutMs: number, server: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${server} did not answer within ${timeoutMs} ms`)), timeoutMs)
  })
  return Promise.race([call, deadline]).finally(() => {
    clearTimeout(timer)
    // The late answer (or failure) of a call given up on goes nowhere.
    call.catch(() => {})
  })
}
