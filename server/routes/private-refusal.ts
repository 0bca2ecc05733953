/**
 * The private leg's refusal of a file whose version a malware record names
 * (issue 31 item 4; engine/policy/private-malware-gate.ts): the version read
 * from the file name, judged by the mount's private verdict, refused with
 * the sentence and 403 the public leg gives the same decision
 * (explain.ts, artifact-answers.ts `refusalOf`).
 */
import type { Ecosystem } from '../../engine/advisory/artifact/database.js'
import type { Clock } from '../../engine/clock.js'
import type { ServiceError } from '../../engine/errors.js'
import type { VersionFacts } from '../../engine/policy/decision.js'
import { explainRefusal } from '../../engine/policy/explain.js'
import type { MountPolicy } from '../../engine/policy/mount-policy.js'
import { fileNameVersion } from '../../engine/pypi/file-name-version.js'
import { normalizeProjectName } from '../../engine/pypi/project-name.js'
import { refusalOf } from './artifact-answers.js'

/** The PEP 440 version a `py` distribution's file name carries (sdist or wheel), or undefined. */
export function pyFileVersion(project: string, file: string): string | undefined {
  return fileNameVersion(file, normalizeProjectName(project))?.version
}

/** `privateRefusal` of the private leg (private-leg.ts) for one mount; `versionOf` reads a file name of the mount (undefined: not judged). */
export function privateMalwareRefusal(
  policy: Pick<MountPolicy, 'privateVerdict' | 'rules'>,
  ecosystem: Ecosystem,
  versionOf: (name: string, file: string) => string | undefined,
  clock: Clock,
): (name: string, file: string) => ServiceError | undefined {
  return (name, file) => {
    const version = versionOf(name, file)
    if (version === undefined) return undefined
    const decision = policy.privateVerdict(name, version)
    if (decision === undefined) return undefined
    const facts: VersionFacts = { ecosystem, name, version, publishedAt: undefined }
    return refusalOf(decision, explainRefusal(decision, facts, policy.rules(), clock.now()))
  }
}
