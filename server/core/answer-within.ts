/** The rejection of a call that did not answer in time. */
export class NoAnswerInTime extends Error {
  constructor(server: string, timeoutMs: number) {
    super(`${server} did not answer within ${timeoutMs} ms`)
    this.name = 'NoAnswerInTime'
  }
}

/**
 * `call`, or a rejection with NoAnswerInTime once `timeoutMs` have passed without its answer: for
 * clients that queue commands while their server is away instead of failing them.
 */
export function answerWithin<T>(call: Promise<T>, timeoutMs: number, server: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswerInTime(server, timeoutMs)), timeoutMs)
  })
  return Promise.race([call, deadline]).finally(() => {
    clearTimeout(timer)
    // The late answer (or failure) of a call given up on goes nowhere.
    call.catch(() => {})
  })
}
