/** One page of a list in OpenAI's shape. */
export interface ListPage<T> {
  object: 'list'
  data: T[]
  first_id: string | null
  last_id: string | null
  has_more: boolean
}

/** Where a page starts and how long it is (1 to 100, 20 by default). */
export interface ListParams {
  /** The id of the item before the page: a previous page's `last_id`. */
  after?: string
  limit?: number
}

/** `after` and `limit` as query parameters. */
export function listQuery(params: ListParams): { after?: string; limit?: string } {
  return { after: params.after, limit: params.limit === undefined ? undefined : String(params.limit) }
}

/** Every item from the page `params` names on, fetching the next page along the `after` cursor as the loop reaches it. */
export async function* paginate<T, P extends ListParams>(page: (params: P) => Promise<ListPage<T>>, params: P): AsyncGenerator<T, void, undefined> {
  for (let current = await page(params); ; current = await page({ ...params, after: current.last_id! })) {
    yield* current.data
    if (!current.has_more || current.last_id === null) return
  }
}
