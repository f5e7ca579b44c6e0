import type { Registry } from 'prom-client'

/** A label value: numbers (statuses) are written as their decimal text. */
export type LabelValue = string | number

/** One series of a counter: add to `value`. */
export interface CounterCell {
  readonly labels: Readonly<Record<string, string>>
  value: number
}

/** One series of a histogram. */
export class HistogramCell {
  /** Observations per bucket (not cumulative), the last one past every bound. */
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe(value: number): void {
    const bounds = this.bounds
    let bucket = 0
    while (bucket < bounds.length && value > bounds[bucket]!) bucket++
    this.counts[bucket]!++
    this.sum += value
    this.count++
  }
}

/** What prom-client's registry reads of a metric (its `get`), in the shape its own metrics give. */
interface MetricValues {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>
}

/** Series a family holds at most; past that, new label sets share one series whose labels all read `other`. */
const defaultMaxSeries = 2_000

/**
 * The series of one labelled metric, each found by its label values through nested maps and kept:
 * the hot path adds to a number, with no label object, hash or string built per call. prom-client
 * (whose `labels()` children hash and check their labels on every `inc`: 0.4 us a call here against
 * 0.01) reads them when scraped, as one of its metrics. The number of series is capped, so that no
 * label value a client controls can grow it without end (callers bound them too).
 */
abstract class CellFamily<Cell extends { readonly labels: Readonly<Record<string, string>> }> {
  private readonly root = new Map<LabelValue, unknown>()
  private readonly cells: Cell[] = []
  private overflow: Cell | null = null

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly maxSeries = defaultMaxSeries,
  ) {}

  protected abstract create(labels: Record<string, string>): Cell

  /** The series of these label values (as many as the family has labels), made on first use. */
  cell(a: LabelValue = '', b: LabelValue = '', c: LabelValue = '', d: LabelValue = '', e: LabelValue = ''): Cell {
    const depth = this.labelNames.length
    const full = this.cells.length >= this.maxSeries
    let node = this.root
    for (let level = 0; level < depth - 1; level++) {
      const value = level === 0 ? a : level === 1 ? b : level === 2 ? c : d
      let next = node.get(value) as Map<LabelValue, unknown> | undefined
      if (next === undefined) {
        // Past the cap, new label values make nothing, not even a map.
        if (full) return this.overflowCell()
        node.set(value, (next = new Map()))
      }
      node = next
    }
    const last = depth === 1 ? a : depth === 2 ? b : depth === 3 ? c : depth === 4 ? d : e
    const found = node.get(last) as Cell | undefined
    if (found !== undefined) return found
    if (full) return this.overflowCell()
    const cell = this.create(this.labelsOf([a, b, c, d, e]))
    this.cells.push(cell)
    node.set(last, cell)
    return cell
  }

  private overflowCell(): Cell {
    return (this.overflow ??= this.create(this.labelsOf(this.labelNames.map(() => 'other'))))
  }

  /** Every series made so far, the shared one past the cap last. */
  protected series(): Cell[] {
    return this.overflow ? [...this.cells, this.overflow] : this.cells
  }

  /** Registers the family with `registry`, which reads it through `get` when scraped. */
  register(registry: Registry): this {
    // The registry asks a metric only for its name and for `get()`, whose answer is what
    // prom-client's own metrics answer; it formats and escapes the text itself.
    registry.registerMetric(this as never)
    return this
  }

  abstract get(): Promise<MetricValues>

  private labelsOf(values: readonly LabelValue[]): Record<string, string> {
    const labels: Record<string, string> = {}
    this.labelNames.forEach((name, index) => (labels[name] = String(values[index])))
    return labels
  }
}

/** A counter's series (see `CellFamily`). */
export class CounterCells extends CellFamily<CounterCell> {
  protected create(labels: Record<string, string>): CounterCell {
    return { labels, value: 0 }
  }

  async get(): Promise<MetricValues> {
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values: this.series().map((cell) => ({ value: cell.value, labels: cell.labels })) }
  }
}

/** A histogram's series (see `CellFamily`), over `bounds` (upper bounds, ascending). */
export class HistogramCells extends CellFamily<HistogramCell> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    maxSeries?: number,
  ) {
    super(name, help, labelNames, maxSeries)
  }

  protected create(labels: Record<string, string>): HistogramCell {
    return new HistogramCell(labels, this.bounds)
  }

  async get(): Promise<MetricValues> {
    const values: MetricValues['values'] = []
    for (const cell of this.series()) {
      let cumulative = 0
      this.bounds.forEach((bound, index) => {
        cumulative += cell.counts[index]!
        values.push({ value: cumulative, labels: { ...cell.labels, le: bound }, metricName: `${this.name}_bucket` })
      })
      values.push({ value: cell.count, labels: { ...cell.labels, le: '+Inf' }, metricName: `${this.name}_bucket` })
      values.push({ value: cell.sum, labels: cell.labels, metricName: `${this.name}_sum` })
      values.push({ value: cell.count, labels: cell.labels, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values }
  }
}
