/**
 * The private leg's malware refusal (issue 31 item 4,
 * server/routes/private-refusal.ts): the version read from the file name of
 * each mount, judged by the mount's private verdict, refused with the public
 * leg's explained 403; a file name of another form is not judged.
 */
import t from 'tap'
import { tarballFileVersion } from '../../engine/npm/names.js'
import type { Decision } from '../../engine/policy/decision.js'
import { privateMalwareRefusal, pyFileVersion } from '../../server/routes/private-refusal.js'
import { decision } from '../helpers/decisions.js'
import { ManualClock } from '../doubles/manual-clock.js'

const MALWARE: Decision = decision('deny', { rule: 'DenyIfMalicious', ruleIndex: 0, reason: 'malware', evidence: ['MAL-2026-5'] })

t.test('the version of a file name: npm tarballs and py distributions', async (t) => {
  t.equal(tarballFileVersion('evil', 'evil-1.0.1.tgz'), '1.0.1')
  t.equal(tarballFileVersion('@scope/evil', 'evil-2.0.0-beta.1.tgz'), '2.0.0-beta.1')
  t.equal(tarballFileVersion('evil', 'other-1.0.1.tgz'), undefined)
  t.equal(tarballFileVersion('evil', 'evil-.tgz'), undefined)
  t.equal(pyFileVersion('Evil_Pkg', 'evil_pkg-1.0.1.tar.gz'), '1.0.1')
  t.equal(pyFileVersion('evil-pkg', 'evil_pkg-1.0.1-py3-none-any.whl'), '1.0.1')
  t.equal(pyFileVersion('evil-pkg', 'other-1.0.1.tar.gz'), undefined)
})

t.test('a named version is refused with the explained 403; others are asked for', async (t) => {
  const asked: string[] = []
  const policy = {
    privateVerdict: (name: string, version: string) => { asked.push(`${name}@${version}`); return version === '1.0.1' ? MALWARE : undefined },
    rules: () => [{ rule: 'DenyIfMalicious' as const }],
  }
  const refuse = privateMalwareRefusal(policy, 'js', tarballFileVersion, new ManualClock(0))
  const refusal = refuse('evil', 'evil-1.0.1.tgz')
  t.match(refusal, { code: 'POLICY_WITHHELD', status: 403, data: { rule: 'DenyIfMalicious', reason: 'malware' } })
  t.match(refusal?.message, /^evil@1\.0\.1 is named by a malicious-package record: MAL-2026-5; denied by DenyIfMalicious \(rule 1\)/)
  t.equal(refuse('evil', 'evil-1.0.0.tgz'), undefined)
  t.equal(refuse('evil', 'renamed.tgz'), undefined, 'a file name of another form is not judged')
  t.same(asked, ['evil@1.0.1', 'evil@1.0.0'])
  const py = privateMalwareRefusal(policy, 'py', pyFileVersion, new ManualClock(0))
  t.match(py('evil-pkg', 'evil_pkg-1.0.1-py3-none-any.whl'), { code: 'POLICY_WITHHELD' })
})
