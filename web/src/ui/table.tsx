import type { ComponentChildren } from 'preact'
import type { PagedList } from '../lib/use-resource'
import { Button } from './button'
import { classNames } from './class-names'
import { ErrorAlert } from './error-alert'
import { Skeleton } from './spinner'

export interface Column<T> {
  header: string
  cell: (row: T) => ComponentChildren
  /** Right-aligned, tabular figures: amounts and counts. */
  numeric?: boolean
  /** Shown to screen readers only (an actions column's header). */
  hiddenHeader?: boolean
}

export interface DataTableProps<T> {
  /** Names the table for assistive technology; visible unless `hideCaption`. */
  caption: string
  hideCaption?: boolean
  columns: Column<T>[]
  rows: T[]
  rowKey: (row: T) => string
  /** Shown in place of the table when there are no rows. */
  empty?: ComponentChildren
}

/** A table that scrolls sideways on a narrow screen (the scroll area can be reached by keyboard). */
export function DataTable<T>({ caption, hideCaption, columns, rows, rowKey, empty }: DataTableProps<T>) {
  if (rows.length === 0 && empty) return <>{empty}</>
  return (
    <div class="table-scroll" role="region" aria-label={caption} tabIndex={0}>
      <table class="table">
        <caption class={classNames(hideCaption && 'visually-hidden')}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.header} scope="col" class={classNames(column.numeric && 'numeric')}>
                {column.hiddenHeader ? <span class="visually-hidden">{column.header}</span> : column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((column) => (
                <td key={column.header} class={classNames(column.numeric && 'numeric')}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** A paged list's table with its loading state, error, and "Load more" button. */
export function PagedTable<T>({ list, ...table }: Omit<DataTableProps<T>, 'rows'> & { list: PagedList<T> }) {
  const firstLoad = list.loading && list.items.length === 0
  return (
    <div class="paged-table">
      {firstLoad ? <Skeleton lines={4} /> : <DataTable {...table} rows={list.items} />}
      <ErrorAlert problem={list.problem} onRetry={list.items.length === 0 ? list.reload : list.loadMore} />
      <LoadMore list={list} />
    </div>
  )
}

/** "Load more" for a paged list, with how many are shown. */
export function LoadMore<T>({ list }: { list: PagedList<T> }) {
  if (!list.hasMore && list.items.length === 0) return null
  return (
    <div class="load-more">
      <span class="muted small" aria-live="polite">
        Showing {list.items.length}
        {list.hasMore ? '' : ' (all)'}
      </span>
      {list.hasMore && (
        <Button small busy={list.loading} onClick={list.loadMore}>
          Load more
        </Button>
      )}
    </div>
  )
}
