import { describe, expect, test } from 'bun:test'
import { JoinedChangeBus, LocalChangeBus, type GovernanceChange } from '../../../server/core/governance/changes'

/** A bus whose coverage the test sets, and which records what was published on it. */
class SettableBus extends LocalChangeBus {
  override coverage: number | null = 1
  readonly published: GovernanceChange[] = []

  override async publish(change: GovernanceChange): Promise<void> {
    this.published.push(change)
    this.deliver(change)
  }
}

function joined() {
  const primary = new SettableBus()
  const announcer = new SettableBus()
  const bus = new JoinedChangeBus(primary, announcer)
  const heard: GovernanceChange[] = []
  const unsubscribe = bus.subscribe((change) => heard.push(change))
  return { primary, announcer, bus, heard, unsubscribe }
}

describe('JoinedChangeBus', () => {
  test('publishes on the primary bus and hears both', async () => {
    const { primary, announcer, bus, heard } = joined()

    await bus.publish({ kind: 'organization', orgId: 'org_api' })
    announcer.deliver({ kind: 'organization', orgId: 'org_sql' })

    expect(primary.published).toEqual([{ kind: 'organization', orgId: 'org_api' }])
    expect(announcer.published).toEqual([])
    expect(heard).toEqual([
      { kind: 'organization', orgId: 'org_api' },
      { kind: 'organization', orgId: 'org_sql' },
    ])
  })

  test('unsubscribing stops both', () => {
    const { primary, announcer, heard, unsubscribe } = joined()
    unsubscribe()

    primary.deliver({ kind: 'deployments' })
    announcer.deliver({ kind: 'deployments' })

    expect(heard).toEqual([])
  })

  test('covers only while both cover, and a new stretch of either is a new stretch of the pair', () => {
    const { primary, announcer, bus } = joined()
    const first = bus.coverage
    const again = bus.coverage

    announcer.coverage = null
    const announcerDown = bus.coverage
    announcer.coverage = 2
    const announcerBack = bus.coverage
    primary.coverage = null
    const primaryDown = bus.coverage
    primary.coverage = 2
    const primaryBack = bus.coverage

    expect(first).not.toBeNull()
    expect(again).toBe(first)
    expect(announcerDown).toBeNull()
    expect(primaryDown).toBeNull()
    expect(new Set([first, announcerBack, primaryBack]).size).toBe(3)
  })
})
