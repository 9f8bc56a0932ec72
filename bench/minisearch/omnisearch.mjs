// An Omnisearch-like baseline for bench/known_items.py: MiniSearch with the
// index, query and weights of Omnisearch 1.29.2 at its default settings
// (github.com/scambier/obsidian-omnisearch, read at commit cc28f53:
// src/search/search-engine.ts, src/search/tokenizer.ts, src/search/query.ts,
// src/repositories/documents-repository.ts, src/tools/text-processing.ts,
// src/settings/index.ts; reproduced here, not copied).
//
// Protocol, one JSON value per line:
//   stdin line 1: {"notes": [{"path", "basename", "content", "aliases": [..],
//                  "headings1": [..], "headings2": [..], "headings3": [..]}]}
//   stdout:       {"ready": N}
//   then per stdin line {"q": "query"}: {"paths": [best first, at most 50],
//                  "open": offset in the first note's content where Omnisearch
//                  opens it (its first match), or -1}
import readline from 'node:readline'
import MiniSearch from 'minisearch'
import searchQueryParser from 'search-query-parser'

// Default settings (src/settings/index.ts getDefaultSettings).
const SETTINGS = {
  weightBasename: 10,
  weightDirectory: 7,
  weightH1: 6,
  weightH2: 5,
  weightH3: 4,
  weightUnmarkedTags: 2,
  fuzziness: 0.1, // setting '1'
  prefixLength: 1, // simpleSearch off
  splitCamelCase: false,
}

// src/globals.ts SEPARATORS / SPACE_OR_PUNCTUATION / BRACKETS_AND_SPACE.
const SEPARATORS =
  /[|\t\n\r\^"= -#%-*,.`\/<>:;?@[-\]_{}\u00A0\u00A1\u00A7\u00AB\u00B6\u00B7\u00BB\u00BF\u037E\u0387\u055A-\u055F\u0589\u058A\u05BE\u05C0\u05C3\u05C6\u05F3\u05F4\u0609\u060A\u060C\u060D\u061B\u061E\u061F\u066A-\u066D\u06D4\u0700-\u070D\u07F7-\u07F9\u0830-\u083E\u085E\u0964\u0965\u0970\u09FD\u0A76\u0AF0\u0C77\u0C84\u0DF4\u0E4F\u0E5A\u0E5B\u0F04-\u0F12\u0F14\u0F3A-\u0F3D\u0F85\u0FD0-\u0FD4\u0FD9\u0FDA\u104A-\u104F\u10FB\u1360-\u1368\u1400\u166E\u1680\u169B\u169C\u16EB-\u16ED\u1735\u1736\u17D4-\u17D6\u17D8-\u17DA\u1800-\u180A\u1944\u1945\u1A1E\u1A1F\u1AA0-\u1AA6\u1AA8-\u1AAD\u1B5A-\u1B60\u1BFC-\u1BFF\u1C3B-\u1C3F\u1C7E\u1C7F\u1CC0-\u1CC7\u1CD3\u2000-\u200A\u2010-\u2029\u202F-\u2043\u2045-\u2051\u2053-\u205F\u207D\u207E\u208D\u208E\u2308-\u230B\u2329\u232A\u2768-\u2775\u27C5\u27C6\u27E6-\u27EF\u2983-\u2998\u29D8-\u29DB\u29FC\u29FD\u2CF9-\u2CFC\u2CFE\u2CFF\u2D70\u2E00-\u2E2E\u2E30-\u2E4F\u3000-\u3003\u3008-\u3011\u3014-\u301F\u3030\u303D\u30A0\u30FB\uA4FE\uA4FF\uA60D-\uA60F\uA673\uA67E\uA6F2-\uA6F7\uA874-\uA877\uA8CE\uA8CF\uA8F8-\uA8FA\uA8FC\uA92E\uA92F\uA95F\uA9C1-\uA9CD\uA9DE\uA9DF\uAA5C-\uAA5F\uAADE\uAADF\uAAF0\uAAF1\uABEB\uFD3E\uFD3F\uFE10-\uFE19\uFE30-\uFE52\uFE54-\uFE61\uFE63\uFE68\uFE6A\uFE6B\uFF01-\uFF03\uFF05-\uFF0A\uFF0C-\uFF0F\uFF1A\uFF1B\uFF1F\uFF20\uFF3B-\uFF3D\uFF3F\uFF5B\uFF5D\uFF5F-\uFF65]/
    .toString()
    .slice(1, -1)
const SPACE_OR_PUNCTUATION = new RegExp(`${SEPARATORS}+`, 'u')
const BRACKETS_AND_SPACE = /[|\[\]\(\)<>\{\} \t\n\r]/u

// src/tools/utils.ts removeDiacritics (ignoreDiacritics on, Arabic off).
const DIACRITICS = /(?!\u30FC|\u309A|\u3099)\p{Diacritic}/gu
function removeDiacritics(str) {
  if (str === null || str === undefined) return ''
  str = str.replaceAll('`', '[__omnisearch__backtick__]').replaceAll('^', '[__omnisearch__caret__]')
  str = str.normalize('NFD').replace(DIACRITICS, '').normalize('NFC')
  return str.replaceAll('[__omnisearch__backtick__]', '`').replaceAll('[__omnisearch__caret__]', '^')
}

function splitHyphens(text) {
  return text.includes('-') ? text.split('-').filter(t => t) : []
}

function splitCamelCase(text) {
  if (!SETTINGS.splitCamelCase || !/[a-z][A-Z]/.test(text)) return []
  return text.replace(/([a-z](?=[A-Z]))/g, '$1 ').split(' ').filter(t => t)
}

// src/search/tokenizer.ts (no Chinese segmenter, tokenizeUrls off; URLs are
// not extracted from queries: markdown-link-extractor is not reproduced).
function tokenizeForIndexing(text) {
  const words = text.split(BRACKETS_AND_SPACE)
  const tokens = text.split(SPACE_OR_PUNCTUATION)
  return [...tokens.flatMap(t => [t, ...splitHyphens(t), ...splitCamelCase(t)]), ...words].filter(Boolean)
}

function tokenizeForSearch(text) {
  const tokens = text.split(SPACE_OR_PUNCTUATION).filter(Boolean)
  return {
    combineWith: 'OR',
    queries: [
      { combineWith: 'AND', queries: tokens },
      { combineWith: 'AND', queries: text.split(BRACKETS_AND_SPACE).filter(Boolean) },
      { combineWith: 'AND', queries: tokens.flatMap(splitHyphens) },
      { combineWith: 'AND', queries: tokens.flatMap(splitCamelCase) },
    ],
  }
}

// src/search/query.ts: the query parsed as Omnisearch parses it.
function parseQuery(raw) {
  const text = removeDiacritics(raw)
  const parsed = searchQueryParser.parse(text.toLowerCase(), { tokenize: true, keywords: ['ext', 'path'] })
  let words = parsed.text ?? []
  if (!Array.isArray(words)) words = [words]
  words = words.filter(o => !o.startsWith('.'))
  let exclude = parsed.exclude?.text ?? []
  if (!Array.isArray(exclude)) exclude = [exclude]
  exclude = exclude.filter(o => o.length)
  const inQuotes = text.match(/"([^"]+)"/g)?.map(o => o.replace(/"/g, '')) ?? []
  return { words, exclude, inQuotes }
}

const miniSearch = new MiniSearch({
  tokenize: tokenizeForIndexing,
  extractField: (doc, field) => {
    if (field === 'directory') {
      const parts = doc.path.split('/')
      parts.pop()
      return parts.join('/')
    }
    return doc[field]
  },
  processTerm: term => removeDiacritics(term).toLowerCase(),
  idField: 'path',
  fields: ['basename', 'directory', 'aliases', 'content', 'headings1', 'headings2', 'headings3'],
})

const byPath = new Map()

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

// src/tools/text-processing.ts getMatches: where the note opens (its first match).
function openOffset(content, terms, query) {
  const words = [...terms].sort((a, b) => b.length - a.length)
  if (!words.length) return -1
  const reg = new RegExp(`(${words.map(s => `\\b${escapeRegExp(s)}\\b|${escapeRegExp(s)}`).join('|')})`, 'gui')
  const text = removeDiacritics(content)
  const offsets = []
  let match
  while ((match = reg.exec(text)) !== null) {
    if (offsets.length >= 99) break
    if (content.substring(match.index, match.index + match[0].length).trim()) offsets.push(match.index)
    if (match[0].length === 0) reg.lastIndex++
  }
  const exact = [...new Set([...query.words.filter(o => o.split(' ').length > 1), ...query.inQuotes])]
  if (query.words.length > 1 || exact.length > 0) {
    const best = query.inQuotes.length
      ? [...query.inQuotes].sort((a, b) => b.length - a.length)[0]
      : query.words.join(' ')
    const at = text.indexOf(best)
    if (at > -1 && offsets.includes(at)) offsets.unshift(at)
  }
  return offsets.length ? offsets[0] : -1
}

function search(raw) {
  const query = parseQuery(raw)
  if (!query.words.length) return { paths: [], open: -1 }
  const f = SETTINGS.fuzziness
  let results = miniSearch.search(tokenizeForSearch(query.words.join(' ')), {
    prefix: term => term.length >= SETTINGS.prefixLength,
    fuzzy: term => (term.length <= 3 ? 0 : term.length <= 5 ? f / 2 : f),
    boost: {
      basename: SETTINGS.weightBasename,
      aliases: SETTINGS.weightBasename,
      displayTitle: SETTINGS.weightBasename,
      directory: SETTINGS.weightDirectory,
      headings1: SETTINGS.weightH1,
      headings2: SETTINGS.weightH2,
      headings3: SETTINGS.weightH3,
      tags: SETTINGS.weightUnmarkedTags,
      unmarkedTags: SETTINGS.weightUnmarkedTags,
    },
    tokenize: text => [text],
  })
  results = results.sort((a, b) => b.score - a.score).slice(0, 50)
  const exact = [...new Set([...query.words.filter(o => o.split(' ').length > 1), ...query.inQuotes])]
  if (exact.length) {
    results = results.filter(r => {
      const doc = byPath.get(r.id)
      const content = removeDiacritics(doc.content).toLowerCase()
      return exact.every(q => content.includes(q) || removeDiacritics(doc.path.toLowerCase()).includes(q))
    })
  }
  if (query.exclude.length) {
    results = results.filter(r => query.exclude.every(q => !byPath.get(r.id).content.toLowerCase().includes(q)))
  }
  results = results.filter((r, i, arr) => arr.findIndex(t => t.id === r.id) === i)
  const first = results[0]
  const open = first ? openOffset(byPath.get(first.id).content, first.terms, query) : -1
  return { paths: results.map(r => r.id), open }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
let loaded = false
for await (const line of lines) {
  if (!line.trim()) continue
  const message = JSON.parse(line)
  if (!loaded) {
    const docs = message.notes.map(n => ({
      path: n.path,
      basename: n.basename,
      content: n.content,
      // documents-repository.ts joins the aliases with '' (sic): kept.
      aliases: (n.aliases ?? []).join(''),
      headings1: (n.headings1 ?? []).join(' '),
      headings2: (n.headings2 ?? []).join(' '),
      headings3: (n.headings3 ?? []).join(' '),
    }))
    for (const doc of docs) byPath.set(doc.path, doc)
    miniSearch.addAll(docs)
    loaded = true
    process.stdout.write(JSON.stringify({ ready: docs.length }) + '\n')
    continue
  }
  process.stdout.write(JSON.stringify(search(message.q)) + '\n')
}
