/** One page of a list ordered by creation; `after` is the id of the last item of the previous page. */
export interface PageQuery {
  after?: string
  limit: number
}

export interface Page<T> {
  items: T[]
  hasMore: boolean
}
