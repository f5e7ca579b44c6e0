import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const repoDir = new URL('../..', import.meta.url).pathname
const pages = ['README.md', ...readdirSync(join(repoDir, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]

/** The text of a markdown page without its fenced code blocks and inline code, where links are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
  for (const [, heading] of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const text = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** Every link and image target of a page that is not a URL with a scheme. */
function relativeTargets(markdown: string): string[] {
  const targets = [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!)
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

describe('the documentation', () => {
  test('README.md is a front page of at most 200 lines', async () => {
    const lines = (await Bun.file(join(repoDir, 'README.md')).text()).trimEnd().split('\n')

    expect(lines.length).toBeLessThanOrEqual(200)
  })

  test.each(pages)('%s: every relative link names a file that exists, and every #anchor a heading of it', async (page) => {
    const markdown = await Bun.file(join(repoDir, page)).text()
    const broken: string[] = []

    const targets = relativeTargets(markdown)
    for (const target of targets) {
      const [path = '', anchor] = target.split('#')
      const file = path === '' ? join(repoDir, page) : join(repoDir, dirname(page), decodeURIComponent(path))
      if (!existsSync(file)) broken.push(`${target}: no ${relative(repoDir, file)}`)
      else if (anchor !== undefined && file.endsWith('.md') && !headingAnchors(await Bun.file(file).text()).has(anchor)) broken.push(`${target}: no heading #${anchor}`)
    }

    expect(targets.length).toBeGreaterThan(0)
    expect(broken).toEqual([])
  })

  test('anchors are made as GitHub makes them, so a link that works there passes here', () => {
    const anchors = headingAnchors('# Probes, metrics and logs\n## Measuring any endpoint: `load.ts`\n```sh\n# not a heading\n```\n## Usage\n## Usage\n## Health: circuits & probes')

    expect([...anchors]).toEqual(['probes-metrics-and-logs', 'measuring-any-endpoint-loadts', 'usage', 'usage-1', 'health-circuits--probes'])
  })
})
