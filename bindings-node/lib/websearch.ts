// The `websearch` builtin's provider, supplied by the host.

/** What the model asked the `websearch` builtin for (core: `SearchRequest`). */
export interface SearchRequest {
  query: string
  /** How many results the tool shows (core: `max_results`); extra ones are dropped. */
  maxResults: number
  /** Only results from these domains and their subdomains; empty = any (core: `allowed_domains`). */
  allowedDomains: string[]
  /** No results from these domains and their subdomains (core: `blocked_domains`). */
  blockedDomains: string[]
}

/** One search result (core: `SearchResult`). */
export interface SearchResult {
  title: string
  url: string
  /** A short extract of the page; default empty. */
  snippet?: string
}

/**
 * A web search provider: a function, or an object with a `search` method, sync or async. The
 * engine filters the results by the requested domains again, caps them and numbers them for the
 * model, so a provider may ignore the filters it cannot apply. `signal` aborts when the engine
 * stops waiting (the turn was cancelled or ended). A throw or a rejection becomes the call's
 * error result (`web search failed: ...`); the turn goes on.
 */
export type WebSearchFunction = (
  request: SearchRequest,
  options: { signal: AbortSignal },
) => SearchResult[] | Promise<SearchResult[]>

/** See {@link WebSearchFunction}. */
export type WebSearch = WebSearchFunction | { search: WebSearchFunction }

/** `websearch`: the provider's function (a method keeps its object), or nothing. */
export function searchFunction(websearch: WebSearch | undefined | null | false): WebSearchFunction | undefined {
  if (websearch === undefined || websearch === null || websearch === false) return undefined
  if (typeof websearch === 'function') return websearch
  if (typeof websearch === 'object' && typeof websearch.search === 'function') return websearch.search.bind(websearch)
  throw new TypeError('websearch must be a function (request, { signal }) => results, or an object with a search method')
}
