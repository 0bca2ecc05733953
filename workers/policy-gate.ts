/**
 * The gate module the packument task loads in each worker (see
 * packument-messages.ts `GateModule`): it builds the mount's rule evaluator
 * over the advisory database shared in a SharedArrayBuffer, one copy for
 * every worker (DESIGN.md), and returns the `decide` callback of one task.
 *
 * Each thread keeps the evaluator of the last generation it saw: the main
 * thread bumps `generation` when the rules, the waivers or the serving
 * advisory artifact change, so a task of the same generation pays neither the rule compile nor
 * the artifact's bounds check again.
 */
import { openSharedAdvisoryArtifact } from '../engine/advisory/artifact/compiled-database.js'
import type { AdvisoryDatabase, Ecosystem } from '../engine/advisory/artifact/database.js'
import type { Decide } from '../engine/packument/merge.js'
import type { Decision, VersionFacts } from '../engine/policy/decision.js'
import { explainRefusal } from '../engine/policy/explain.js'
import type { PolicyGateOptions } from '../engine/policy/mount-policy.js'
import { createPolicyEvaluator } from '../engine/policy/waived-evaluator.js'
import { privateMalwareGate } from '../engine/policy/private-malware-gate.js'
import { ownsName } from '../engine/publish/publish-scope.js'

interface Built {
  readonly generation: number
  readonly decideAt: (now: number) => Decide
}

const built = new Map<Ecosystem, Built>()

function build(options: PolicyGateOptions): Built {
  const database: AdvisoryDatabase | undefined = options.advisory === undefined
    ? undefined
    : openSharedAdvisoryArtifact(options.advisory.shared, options.advisory.publishedAt === undefined ? undefined : new Date(options.advisory.publishedAt))
  // An advisory rule's answers change when the push reaches its maximum age (SPEC.md 3.5).
  const publishedAt = options.advisory?.publishedAt
  const expiresAt = publishedAt === undefined ? undefined : publishedAt + options.maxAgeSeconds * 1000
  // The evaluator reads the clock per evaluation; a task pins it to its own `now`.
  let now = 0
  const context = { ecosystem: options.ecosystem, database, clock: { now: () => now }, maxAgeSeconds: options.maxAgeSeconds }
  const evaluator = createPolicyEvaluator(options.rules, options.waivers, context)
  const scopes = options.ownedScopes ?? []
  const privateGate = privateMalwareGate(options.rules, options.waivers, context, scopes.length === 0 ? undefined : ownsName(scopes))
  return {
    generation: options.generation,
    decideAt: (taskNow) => Object.assign((facts: VersionFacts) => {
      now = taskNow
      return evaluator.evaluate(facts, 'admission')
    }, {
      needs: evaluator.needs,
      clock: { now: taskNow, ageSteps: evaluator.ageSteps, expiresAt, regateAt: evaluator.regateAt },
      // What a withheld version's refusal says, for the answers that speak of one (npm audit view, npm-notice).
      explain: (decision: Decision, facts: VersionFacts) => explainRefusal(decision, facts, options.rules, taskNow)?.message ?? decision.reason,
      // Which withheld versions the npm audit view lists: those an advisory affects (merge.ts Decide.affected).
      ...(database === undefined ? {} : { affected: (name: string, version: string) => database.affecting(name, version).length > 0 }),
      ...(privateGate === undefined ? {} : {
        privateVerdict: (name: string, version: string) => {
          now = taskNow
          return privateGate(name, version)
        },
      }),
    }),
  }
}

export function createDecide(options: unknown, now: number): Decide {
  const o = options as PolicyGateOptions
  let entry = built.get(o.ecosystem)
  if (entry === undefined || entry.generation !== o.generation) {
    entry = build(o)
    built.set(o.ecosystem, entry)
  }
  return entry.decideAt(now)
}
