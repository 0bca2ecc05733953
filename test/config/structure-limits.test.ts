import t from 'tap'
import { AUTOMATIC_MAX_ARTIFACT_COUNT, AUTOMATIC_MAX_VERSION_COUNT, structureLimits } from '../../engine/config/structure-limits.js'

t.test('0 is automatic; any other value is a pin, kept as given', async (t) => {
  t.same(structureLimits({ maxVersionCount: 0, maxArtifactCount: 0 }), { maxVersionCount: AUTOMATIC_MAX_VERSION_COUNT, maxArtifactCount: AUTOMATIC_MAX_ARTIFACT_COUNT })
  t.same(structureLimits({ maxVersionCount: 12, maxArtifactCount: 0 }), { maxVersionCount: 12, maxArtifactCount: AUTOMATIC_MAX_ARTIFACT_COUNT })
  t.same(structureLimits({ maxVersionCount: 0, maxArtifactCount: 7 }), { maxVersionCount: AUTOMATIC_MAX_VERSION_COUNT, maxArtifactCount: 7 })
})

t.test('the automatic values are far above real packuments', async (t) => {
  t.equal(AUTOMATIC_MAX_VERSION_COUNT, 50_000)
  t.equal(AUTOMATIC_MAX_ARTIFACT_COUNT, 50_000)
})
