/** One instruction of a Dockerfile: its keyword in capitals and its arguments, continuations joined. */
export interface Instruction {
  keyword: string
  args: string
  /** The stage it belongs to: the `AS` name of the FROM above it. */
  stage: string
  line: number
}

/** The instructions of a Dockerfile's text, without comments, parser directives or blank lines. */
export function dockerfileInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = []
  let pending = ''
  let startLine = 0
  let stage = ''
  text.split('\n').forEach((raw, index) => {
    const line = raw.trimEnd()
    if (pending === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) return
    // Comment lines inside a continued instruction are dropped, as Docker does.
    if (pending !== '' && line.trimStart().startsWith('#')) return
    if (pending === '') startLine = index + 1
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      return
    }
    const whole = (pending + line).trim()
    pending = ''
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/s.exec(whole) ?? []
    const upper = keyword.toUpperCase()
    if (upper === 'FROM') stage = /\bAS\s+(\S+)\s*$/i.exec(args)?.[1] ?? ''
    instructions.push({ keyword: upper, args: args.replace(/\s+/g, ' '), stage, line: startLine })
  })
  if (pending !== '') throw new Error(`the Dockerfile ends inside a continued instruction (line ${startLine})`)
  return instructions
}

/** The command of an exec-form (JSON array) argument, or null when it is in shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null
  const parsed: unknown = JSON.parse(args)
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) throw new Error(`not an exec form: ${args}`)
  return parsed
}

/** `--flag=value` options at the start of an instruction's arguments, and the rest. */
export function splitFlags(args: string): { flags: Record<string, string>; rest: string } {
  const flags: Record<string, string> = {}
  let rest = args
  for (let match = /^--([a-z-]+)=(\S+)\s*/.exec(rest); match; match = /^--([a-z-]+)=(\S+)\s*/.exec(rest)) {
    flags[match[1]!] = match[2]!
    rest = rest.slice(match[0].length)
  }
  return { flags, rest }
}
