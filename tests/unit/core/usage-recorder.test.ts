import { afterEach, describe, expect, test } from 'bun:test'
import type { UsageEvent, UsageRepository } from '../../../server/core/ports'
import { UsageRecorder, type UsageRecorderOptions } from '../../../server/core/usage-recorder'
import { usageEvent } from '../../support/usage-events'
import { waitFor } from '../../support/wait-for'

/** A repository that keeps what it is given and can be told to fail or to hold a write open. */
class FakeUsageRepository implements UsageRepository {
  readonly written: UsageEvent[] = []
  readonly batchSizes: number[] = []
  calls = 0
  failuresLeft = 0
  inFlight = 0
  maxInFlight = 0
  private gate: Promise<void> | null = null
  private openGate: (() => void) | null = null

  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve))
  }

  release(): void {
    this.openGate?.()
    this.gate = null
  }

  async insertUsageEvents(events: UsageEvent[]): Promise<void> {
    this.calls += 1
    this.inFlight += 1
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    try {
      if (this.gate) await this.gate
      if (this.failuresLeft > 0) {
        this.failuresLeft -= 1
        throw new Error('connection refused')
      }
      this.written.push(...events)
      this.batchSizes.push(events.length)
    } finally {
      this.inFlight -= 1
    }
  }
}

const recorders: UsageRecorder[] = []
afterEach(async () => {
  await Promise.all(recorders.splice(0).map((recorder) => recorder.close()))
})

function recorderFor(repository: UsageRepository, options: Partial<UsageRecorderOptions> = {}) {
  const logged: string[] = []
  const recorder = new UsageRecorder(repository, { flushMs: 60_000, retryMs: 1, maxRetryMs: 5, log: (line) => logged.push(line), ...options })
  recorders.push(recorder)
  return { recorder, logged }
}

function events(count: number): UsageEvent[] {
  return Array.from({ length: count }, () => usageEvent())
}

const requestIds = (list: UsageEvent[]) => list.map((event) => event.requestId)

describe('UsageRecorder', () => {
  test('record() only queues: nothing reaches the repository on the caller’s stack', () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository, { batchSize: 2 })

    for (const event of events(5)) recorder.record(event)

    expect(repository.calls).toBe(0)
    expect(recorder.pending).toBe(5)
  })

  test('writes queued events in one batch when the timer fires', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository, { flushMs: 10 })
    const recorded = events(3)

    for (const event of recorded) recorder.record(event)
    await waitFor(() => repository.written.length === 3)

    expect(repository.batchSizes).toEqual([3])
    expect(requestIds(repository.written)).toEqual(requestIds(recorded))
  })

  test('writes without waiting for the timer once a batch is full, in batches of at most 20,000', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository)
    const recorded = events(48_000)

    for (const event of recorded) recorder.record(event)
    await waitFor(() => repository.written.length === 48_000)

    expect(repository.batchSizes).toEqual([20_000, 20_000, 8_000])
    expect(requestIds(repository.written)).toEqual(requestIds(recorded))
  })

  test('runs one write at a time', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository, { batchSize: 10 })
    repository.hold()

    for (const event of events(10)) recorder.record(event)
    await waitFor(() => repository.calls === 1)
    for (const event of events(25)) recorder.record(event)
    await new Promise((resolve) => setImmediate(resolve))
    const callsWhileHeld = repository.calls
    repository.release()
    await waitFor(() => repository.written.length === 30)

    expect(callsWhileHeld).toBe(1)
    expect(repository.maxInFlight).toBe(1)
    // Full batches follow at once; the rest waits for the timer.
    expect(repository.batchSizes).toEqual([10, 10, 10])
    expect(recorder.pending).toBe(5)
  })

  test('keeps failed events and retries them, losing and duplicating none, logging the outage once', async () => {
    const repository = new FakeUsageRepository()
    const { recorder, logged } = recorderFor(repository, { flushMs: 5 })
    repository.failuresLeft = 4
    const recorded = events(30)

    for (const event of recorded.slice(0, 10)) recorder.record(event)
    await waitFor(() => repository.calls >= 2)
    for (const event of recorded.slice(10)) recorder.record(event)
    await waitFor(() => repository.written.length === 30)

    expect(requestIds(repository.written)).toEqual(requestIds(recorded))
    expect(logged).toHaveLength(2)
    expect(logged[0]).toContain('connection refused')
    expect(logged[1]).toContain('after 4 failed attempts')
  })

  test('flush() rejects while the repository fails and keeps the events for the next attempt', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository, { retryMs: 60_000, maxRetryMs: 60_000 })
    repository.failuresLeft = 1
    const recorded = events(4)
    for (const event of recorded) recorder.record(event)

    const failure = await recorder.flush().catch((error: Error) => error)

    expect(failure).toEqual(new Error('connection refused'))
    expect(recorder.pending).toBe(4)
    await recorder.flush()
    expect(requestIds(repository.written)).toEqual(requestIds(recorded))
  })

  test('close() writes what is left', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository)
    const recorded = events(7)
    for (const event of recorded) recorder.record(event)

    await recorder.close()

    expect(requestIds(repository.written)).toEqual(requestIds(recorded))
  })

  test('close() retries a failing repository, then gives up after its timeout and says how much is unwritten', async () => {
    const repository = new FakeUsageRepository()
    const { recorder, logged } = recorderFor(repository, { closeTimeoutMs: 50 })
    repository.failuresLeft = Number.POSITIVE_INFINITY
    for (const event of events(7)) recorder.record(event)

    await recorder.close()

    expect(repository.calls).toBeGreaterThan(1)
    expect(logged.at(-1)).toContain('7 usage events unwritten')
  })

  test('events recorded after close() are still written', async () => {
    const repository = new FakeUsageRepository()
    const { recorder } = recorderFor(repository)
    await recorder.close()
    const late = usageEvent()

    recorder.record(late)
    await waitFor(() => repository.written.length === 1)

    expect(requestIds(repository.written)).toEqual([late.requestId])
  })
})

describe('UsageRecorder when events pile up', () => {
  test('is full from maxPending queued events until half of them are written, and says so once each way', async () => {
    const repository = new FakeUsageRepository()
    repository.hold()
    const { recorder, logged } = recorderFor(repository, { maxPending: 10, batchSize: 4 })

    for (const event of events(9)) recorder.record(event)
    const belowLimit = recorder.full
    for (const event of events(3)) recorder.record(event)
    const atLimit = [recorder.full, recorder.full]
    repository.release()
    await waitFor(() => recorder.pending <= 5, { what: 'half of the events written' })

    expect(belowLimit).toBe(false)
    expect(atLimit).toEqual([true, true])
    expect(recorder.full).toBe(false)
    expect(logged.filter((line) => line.includes('refusing new requests'))).toHaveLength(1)
    expect(logged.filter((line) => line.includes('accepting requests again'))).toHaveLength(1)
  })
})
