import type { Page } from 'playwright-core'

const axeSource = await Bun.file(new URL('../../../node_modules/axe-core/axe.min.js', import.meta.url)).text()

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[]; failureSummary?: string }[]
}

/**
 * Runs axe-core on the page as it is now and throws when it finds a serious or critical violation,
 * naming each rule and the elements that break it. axe is evaluated over the DevTools protocol
 * (page.evaluate), which the page's CSP does not govern; adding it as a <script> would be an inline
 * script the CSP rightly refuses, and turning the CSP off for the whole context would hide the
 * very violations the other checks look for.
 */
export async function expectNoSeriousA11yViolations(page: Page, screen: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: AxeViolation[] }> } }).axe
    const results = await axe.run(document, { resultTypes: ['violations'] })
    return results.violations.map(({ id, impact, help, nodes }) => ({ id, impact, help, nodes: nodes.map(({ target, failureSummary }) => ({ target, failureSummary })) }))
  })
  const serious = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
  if (serious.length === 0) return
  const lines = serious.map(
    (violation) =>
      `${violation.impact} ${violation.id}: ${violation.help}\n` +
      violation.nodes
        .slice(0, 5)
        .map((node) => `    ${node.target.join(' ')}${node.failureSummary ? `: ${node.failureSummary.replace(/\s+/g, ' ')}` : ''}`)
        .join('\n'),
  )
  throw new Error(`axe found ${serious.length} serious or critical violation(s) on ${screen} (${page.url()}):\n${lines.join('\n')}`)
}
