import type { Subprocess } from 'bun'

const repoDir = new URL('../..', import.meta.url).pathname
// Variables of the calling shell that would point a child elsewhere than the test wants.
const inheritedButOverridden = ['DATABASE_URL', 'DATA_DIR', 'HOST', 'PORT', 'PUBLIC_BASE_URL', 'NILEGATE_CONFIG', 'REDIS_URL']

/** The environment of this process without the variables that choose databases and addresses, plus `env`. */
export function childEnv(env: Record<string, string> = {}): Record<string, string> {
  const result: Record<string, string> = {}
  for (const [name, value] of Object.entries(Bun.env)) if (value !== undefined && !inheritedButOverridden.includes(name)) result[name] = value
  return { ...result, ...env }
}

export interface Finished {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `bun <args>` in the repository to completion, killing it after `timeoutMs`. */
export function runBun(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<Finished> {
  return startBun(args, env, timeoutMs).finished
}

/** Starts `bun <args>` in the repository; `finished` resolves with its output once it exits (or is killed after `timeoutMs`). */
export function startBun(args: string[], env: Record<string, string>, timeoutMs = 60_000): { pid: number; finished: Promise<Finished> } {
  const child = Bun.spawn(['bun', ...args], { cwd: repoDir, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const finished = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    .then(([stdout, stderr, code]) => ({ code, stdout, stderr }))
    .finally(() => clearTimeout(timer))
  return { pid: child.pid, finished }
}

/** The pid of a process that has exited, for fabricating stale locks. */
export async function deadPid(): Promise<number> {
  const child = Bun.spawn(['bun', '--version'], { stdout: 'ignore', stderr: 'ignore' })
  await child.exited
  return child.pid
}

/** Starts `bun <args>` with a pipe on stdin (closing it tells lock-holder.ts to let go). */
export function spawnBun(args: string[], env: Record<string, string> = childEnv()): Subprocess<'pipe', 'pipe', 'pipe'> {
  return Bun.spawn(['bun', ...args], { cwd: repoDir, env, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
}

/** The first line a child prints on stdout. */
export async function firstLine(child: Subprocess<'pipe', 'pipe', 'pipe'>): Promise<string> {
  const decoder = new TextDecoder()
  const reader = child.stdout.getReader()
  let text = ''
  try {
    while (!text.includes('\n')) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
  } finally {
    reader.releaseLock()
  }
  return text.split('\n')[0]!
}
