import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { acquireDataDirLock, DataDirLockedError, dataDirLockPath, liveDataDirLockHolder } from '../../server/data-dir-lock'
import { createTempDir } from '../support/databases'
import { deadPid, firstLine, spawnBun } from '../support/processes'

const temp = createTempDir('lock')
afterAll(() => temp.remove())
let dirCount = 0
const freshDataDir = () => join(temp.path, `data-${++dirCount}`)

describe('acquireDataDirLock', () => {
  test('creates the data directory and a lock file holding our pid, removed on release', () => {
    const dataDir = freshDataDir()

    const lock = acquireDataDirLock(dataDir)
    const content = readFileSync(lock.path, 'utf8')
    lock.release()

    expect(lock.path).toBe(dataDirLockPath(dataDir))
    expect(content).toBe(`${process.pid}\n`)
    expect(existsSync(lock.path)).toBe(false)
  })

  test('refuses while another live process holds the lock, naming its pid', async () => {
    const dataDir = freshDataDir()
    const holder = spawnBun(['tests/support/lock-holder.ts', dataDir])
    try {
      expect(await firstLine(holder)).toBe(`locked ${holder.pid}`)

      const refusal = (() => {
        try {
          acquireDataDirLock(dataDir)
        } catch (error) {
          return error
        }
      })()

      expect(refusal).toBeInstanceOf(DataDirLockedError)
      expect(refusal).toMatchObject({ holderPid: holder.pid, lockPath: dataDirLockPath(dataDir) })
      expect((refusal as Error).message).toContain('DATABASE_URL')
      expect(liveDataDirLockHolder(dataDir)).toBe(holder.pid)
    } finally {
      holder.stdin.end()
      await holder.exited
    }
    expect(existsSync(dataDirLockPath(dataDir))).toBe(false)
  })

  test('takes over a lock left by a process that died', async () => {
    const dataDir = freshDataDir()
    acquireDataDirLock(dataDir).release()
    writeFileSync(dataDirLockPath(dataDir), `${await deadPid()}\n`)

    const lock = acquireDataDirLock(dataDir)

    expect(readFileSync(lock.path, 'utf8')).toBe(`${process.pid}\n`)
    lock.release()
  })

  test('takes over a lock file without a pid, and one naming this very process', () => {
    const dataDir = freshDataDir()
    acquireDataDirLock(dataDir).release()

    writeFileSync(dataDirLockPath(dataDir), 'garbage')
    const afterGarbage = acquireDataDirLock(dataDir)
    afterGarbage.release()
    // A restarted container gateway finds its own pid (1) in the lock its predecessor left.
    writeFileSync(dataDirLockPath(dataDir), `${process.pid}\n`)
    const afterOwnPid = acquireDataDirLock(dataDir)

    expect(readFileSync(afterOwnPid.path, 'utf8')).toBe(`${process.pid}\n`)
    afterOwnPid.release()
  })

  test('release leaves alone a lock that another process holds by then', () => {
    const dataDir = freshDataDir()
    const lock = acquireDataDirLock(dataDir)
    writeFileSync(lock.path, '999999999\n')

    lock.release()

    expect(readFileSync(lock.path, 'utf8')).toBe('999999999\n')
  })

  test('of processes racing for a stale lock, exactly one wins', async () => {
    const dataDir = freshDataDir()
    acquireDataDirLock(dataDir).release()
    writeFileSync(dataDirLockPath(dataDir), `${await deadPid()}\n`)

    const racers = Array.from({ length: 6 }, () => spawnBun(['tests/support/lock-holder.ts', dataDir]))
    try {
      const outcomes = await Promise.all(racers.map(firstLine))

      const winners = racers.filter((racer, index) => outcomes[index] === `locked ${racer.pid}`)
      expect(winners).toHaveLength(1)
      expect(outcomes.filter((line) => line === `refused ${winners[0]!.pid}`)).toHaveLength(racers.length - 1)
      expect(readFileSync(dataDirLockPath(dataDir), 'utf8')).toBe(`${winners[0]!.pid}\n`)
    } finally {
      for (const racer of racers) racer.stdin.end()
      await Promise.all(racers.map((racer) => racer.exited))
    }
  })
})
