import { availableParallelism, cpus, totalmem } from 'node:os'

/** What a result depends on besides the code: written beside every table. */
export interface MachineInfo {
  cores: number
  cpuModel: string
  memoryGiB: number
  kernel: string
  bunVersion: string
  commit: string
}

/** Reads the machine and the checkout the bench runs on. */
export function readMachineInfo(repoDir: string): MachineInfo {
  const commit = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: repoDir })
  // Results written by an earlier run of the same session are not changes to what is measured.
  const dirty = Bun.spawnSync(['git', 'status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/RESULTS*.md'], { cwd: repoDir })
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() || 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: Bun.spawnSync(['uname', '-sr']).stdout.toString().trim() || process.platform,
    bunVersion: Bun.version,
    commit: commit.exitCode === 0 ? commit.stdout.toString().trim() + (dirty.stdout.toString().trim() ? ' (with local changes)' : '') : 'unknown',
  }
}
