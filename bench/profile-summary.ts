// Sums a gateway CPU profile (`bun bench/run.ts --profile DIR` writes one) by where the time goes:
// self time per package or file, self and inclusive time per function. Samples before the first
// chat request are dropped, so start-up (PGlite opening, module loading, demo tenants) does not
// hide the steady state.
//
//   bun bench/profile-summary.ts DIR/CPU.*.cpuprofile [--top 25] [--all]

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
}

/** Functions whose presence in a stack means a chat request is being served. */
const steadyStateMarkers = ['completeChat', 'openChatStream']

function placeOf(url: string): string {
  if (!url) return '(native)'
  const inPackage = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (inPackage) return inPackage[1]!
  return url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '')
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame
  return `${functionName || '(anonymous)'} ${placeOf(url)}${lineNumber >= 0 ? `:${lineNumber + 1}` : ''}`
}

/** Shares of samples: self by place, self by function, inclusive by function. */
export function summarizeProfile(profile: CpuProfile, options: { fromFirstRequest: boolean }) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parentOf = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
  const stackOf = (id: number) => {
    const stack: ProfileNode[] = []
    for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) stack.push(byId.get(current)!)
    return stack
  }

  let first = 0
  if (options.fromFirstRequest) {
    const index = profile.samples.findIndex((id) => stackOf(id).some((node) => steadyStateMarkers.includes(node.callFrame.functionName)))
    first = index < 0 ? 0 : index
  }
  const samples = profile.samples.slice(first)
  const selfByPlace = new Map<string, number>()
  const selfByFunction = new Map<string, number>()
  const inclusive = new Map<string, number>()
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  let idle = 0
  for (const id of samples) {
    const node = byId.get(id)!
    if (node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(program)') {
      idle++
      continue
    }
    add(selfByPlace, placeOf(node.callFrame.url))
    add(selfByFunction, frameName(node))
    for (const name of new Set(stackOf(id).map(frameName))) add(inclusive, name)
  }
  return { samples: samples.length, skipped: first, idle, selfByPlace, selfByFunction, inclusive }
}

if (import.meta.main) {
  const args = Bun.argv.slice(2)
  const path = args.find((arg) => !arg.startsWith('--') && !/^\d+$/.test(arg))
  if (!path) {
    console.error('usage: bun bench/profile-summary.ts FILE.cpuprofile [--top 25] [--all]')
    process.exit(2)
  }
  const topIndex = args.indexOf('--top')
  const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 25
  const summary = summarizeProfile(await Bun.file(path).json(), { fromFirstRequest: !args.includes('--all') })
  const busy = summary.samples - summary.idle
  const table = (title: string, map: Map<string, number>) =>
    [`\n${title} (share of busy samples)`, ...[...map].sort((a, b) => b[1] - a[1]).slice(0, top).map(([key, count]) => `${((100 * count) / busy).toFixed(1).padStart(6)}%  ${key}`)].join('\n')
  console.log(`${summary.samples} samples (${summary.skipped} before the first chat request skipped), ${busy} busy`)
  console.log(table('self time by package or file', summary.selfByPlace))
  console.log(table('self time by function', summary.selfByFunction))
  console.log(table('inclusive time by function', summary.inclusive))
}
