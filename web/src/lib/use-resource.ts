import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { reportError, type ApiProblem } from './api'
import type { ListPage } from './sdk'

/** Data a screen loads: the data, its error, and a way to load it again. */
export interface Resource<T> {
  data: T | undefined
  problem: ApiProblem | null
  loading: boolean
  reload: () => void
  /** Changes the data in place (after an edit the server confirmed). */
  setData: (update: (current: T | undefined) => T | undefined) => void
}

/** Runs `load`; a throw before its promise exists is reported like a rejection, never left uncaught. */
function attempt<T>(load: () => Promise<T>): Promise<T> {
  try {
    return load()
  } catch (error) {
    return Promise.reject(error)
  }
}

function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError'
}

/** Loads `load()` now and again whenever `deps` change; a stale answer is dropped. */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined)
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const [loading, setLoading] = useState(true)
  const [round, setRound] = useState(0)

  useEffect(() => {
    const controller = new AbortController()
    setLoading(true)
    setProblem(null)
    attempt(() => load(controller.signal)).then(
      (value) => {
        if (controller.signal.aborted) return
        setData(value)
        setLoading(false)
      },
      (error) => {
        if (controller.signal.aborted || isAbort(error)) return
        setProblem(reportError(error))
        setLoading(false)
      },
    )
    return () => controller.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, round])

  return { data, problem, loading, reload: useCallback(() => setRound((value) => value + 1), []), setData }
}

/** One page of a list and where the next one starts (null at the end). */
export interface CursorPage<T> {
  data: T[]
  next: string | null
}

/** A page of OpenAI's list shape as a cursor page: the next one starts after `last_id`. */
export function cursorPage<T>(page: ListPage<T>): CursorPage<T> {
  return { data: page.data, next: page.has_more ? page.last_id : null }
}

/** A list loaded a page at a time: the items so far, and "load more" for the next page. */
export interface PagedList<T> {
  items: T[]
  problem: ApiProblem | null
  loading: boolean
  hasMore: boolean
  loadMore: () => void
  reload: () => void
  /** Changes the items in place (after an edit the server confirmed). */
  update: (change: (items: T[]) => T[]) => void
}

/** Loads the first page now (and again when `deps` change), the next ones on `loadMore()`. */
export function usePagedList<T>(load: (cursor: string | undefined, signal: AbortSignal) => Promise<CursorPage<T>>, deps: unknown[]): PagedList<T> {
  const [items, setItems] = useState<T[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [problem, setProblem] = useState<ApiProblem | null>(null)
  const [loading, setLoading] = useState(true)
  const [round, setRound] = useState(0)
  const controller = useRef<AbortController | null>(null)

  const fetchPage = (cursor: string | undefined, append: boolean) => {
    controller.current?.abort()
    const current = new AbortController()
    controller.current = current
    setLoading(true)
    setProblem(null)
    attempt(() => load(cursor, current.signal)).then(
      (page) => {
        if (current.signal.aborted) return
        setItems((existing) => (append ? [...existing, ...page.data] : page.data))
        setNext(page.next)
        setLoading(false)
      },
      (error) => {
        if (current.signal.aborted || isAbort(error)) return
        setProblem(reportError(error))
        setLoading(false)
      },
    )
  }

  useEffect(() => {
    setItems([])
    setNext(null)
    fetchPage(undefined, false)
    return () => controller.current?.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, round])

  return {
    items,
    problem,
    loading,
    hasMore: next !== null,
    loadMore: () => {
      if (next !== null) fetchPage(next, true)
    },
    reload: () => setRound((value) => value + 1),
    update: (change) => setItems(change),
  }
}
