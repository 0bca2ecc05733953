/**
 * Reading the configuration's two sources (SPEC.md 2.11): the document
 * (`--config FILE` or `SERVICE_CONFIG`, YAML or JSON) overlaid by `SERVICE_`
 * environment variables (environment.ts), environment winning key by key.
 * Nothing is checked here but what reading needs: a document that cannot be
 * read or parsed is a problem located by line and column, never quoted (the
 * line may be a URL with its credential).
 *
 * Removing a document pin cannot restore an automatic value while an
 * environment pin remains: the overlay is applied on every load, after the
 * document, so an environment value always decides its key.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import Guard from 'typebox/guard'
import YAML, { YAMLError } from 'yaml'
import { CONFIG_REFUSAL } from '../errors.js'
import { readEnvironment } from './environment.js'
import type { ConfigProblem } from './problems.js'
import { ConfigSchema } from './schema.js'

export interface ConfigSources {
  /** The document named, if any (`--config` wins over `SERVICE_CONFIG`). */
  readonly documentPath: string | undefined
  /** The document overlaid by the environment, unchecked. */
  readonly merged: Record<string, unknown>
  /** Where the value at a dotted path came from: `environment VARIABLE`, `document FILE` or `defaults`. */
  readonly sourceOf: (path: string) => string
  readonly problems: readonly ConfigProblem[]
}

export function readSources(configPath: string | undefined, env: NodeJS.ProcessEnv): ConfigSources {
  const problems: ConfigProblem[] = []
  const documentPath = configPath ?? nonEmpty(env['SERVICE_CONFIG'])
  const documentSource = documentPath === undefined ? 'defaults' : `document ${documentPath}`

  let document: Record<string, unknown> = {}
  if (documentPath !== undefined) {
    const read = readDocument(resolve(documentPath))
    if (read.ok) document = read.value
    else problems.push({ path: '', message: read.message, source: documentSource })
  }

  const overlay = readEnvironment(ConfigSchema, env)
  problems.push(...overlay.problems)
  const sourceOf = (path: string): string => {
    for (const [key, variable] of overlay.origins) {
      if (path === key || path.startsWith(`${key}.`)) return `environment ${variable}`
    }
    return documentSource
  }
  return { documentPath, merged: deepMerge(document, overlay.values), sourceOf, problems }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value
}

function readDocument(path: string): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { ok: false, message: CONFIG_REFUSAL.unreadableDocument((error as Error).message) }
  }
  let value: unknown
  try {
    // YAML 1.2 is a superset of JSON, so one parser reads both; JSON errors stay precise.
    value = path.endsWith('.json') ? JSON.parse(text) : YAML.parse(text, { uniqueKeys: true, prettyErrors: false })
  } catch (error) {
    return { ok: false, message: CONFIG_REFUSAL.unparsableDocument(syntaxProblem(error, text, path.endsWith('.json'))) }
  }
  if (value === null || value === undefined) return { ok: true, value: {} }
  if (!Guard.IsObjectNotArray(value)) return { ok: false, message: CONFIG_REFUSAL.documentNotMapping }
  return { ok: true, value: value as Record<string, unknown> }
}

/**
 * A syntax error located by line and column, without the document's text:
 * yaml's pretty errors quote the offending line and V8's JSON errors a
 * snippet around it, and that line may be a URL with its credential.
 */
export function syntaxProblem(error: unknown, text: string, json: boolean): string {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof YAMLError) return `${message.split('\n')[0] as string} at ${lineColumn(text, error.pos[0])}`
  // yaml's other throws (an unresolved alias) name a YAML identifier at most.
  if (!json) return message.split('\n')[0] as string
  // V8's fixed wording, then the offset: `Expected ',' or '}' after property value in JSON at position 30`.
  const located = /^([A-Za-z ',{}[\]:]*?) in JSON at position (\d+)/.exec(message)
  if (located !== null) return `${located[1]} at ${lineColumn(text, Number(located[2]))}`
  if (message === 'Unexpected end of JSON input') return message
  // `Unexpected token 'h', "{"url": https://u:"... is not valid JSON` quotes the document: say less.
  return 'not valid JSON (the offending text is not echoed)'
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, offset))
  const line = before.split('\n').length
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) {
    const current = out[key]
    out[key] = Guard.IsObjectNotArray(current) && Guard.IsObjectNotArray(value) ? deepMerge(current, value) : value
  }
  return out
}
