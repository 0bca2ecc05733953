/**
 * The real Simple API pages of ../shared/data/pypi-simple (see its README),
 * each with the project it is a page of and the URL it was served from
 * (relative links resolve against it). Read-only fixtures; a missing data
 * folder fails the tests that use them rather than skipping silently.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const FIXTURE_ROOT = process.env.PYPI_SIMPLE_FIXTURES ?? '/work/shared/data/pypi-simple'

export interface FixturePage {
  readonly path: string
  readonly format: 'html' | 'json'
  readonly project: string
  readonly pageUrl: string
}

const page = (path: string, project: string): FixturePage => ({
  path,
  format: path.endsWith('.json') ? 'json' : 'html',
  project,
  pageUrl: `https://index.example/simple/${project}/`,
})

export const FIXTURE_PAGES: readonly FixturePage[] = [
  page('pep503-html/dependabot-core/pypi_simple_response.html', 'luigi'),
  page('pep503-html/dependabot-core/pypi_simple_response_attrs.html', 'attrs'),
  page('pep503-html/dependabot-core/pypi_simple_response_devpi.html', 'luigi'),
  page('pep503-html/dependabot-core/pypi_simple_response_django.html', 'django'),
  page('pep503-html/dependabot-core/pypi_simple_response_multiline.html', 'luigi'),
  page('pep503-html/dependabot-core/pypi_simple_response_requests.html', 'requests'),
  page('pep503-html/dependabot-core/pypi_simple_response_urllib3.html', 'urllib3'),
  page('pep503-html/dependabot-core/pypi_simple_response_yanked.html', 'luigi'),
  page('pep503-html/dependabot-core/pypi_simple_response_zip.html', 'luigi'),
  page('pep503-html/poetry/black.html', 'black'),
  page('pep503-html/poetry/futures-partial-yank.html', 'futures'),
  page('pep503-html/poetry/ipython.html', 'ipython'),
  page('pep503-html/poetry/isort.html', 'isort'),
  page('pep503-html/poetry/pyyaml.html', 'pyyaml'),
  page('pep503-html/pypi-simple/aws-adfs-ebsco.html', 'aws-adfs-ebsco'),
  page('pep503-html/pypi-simple/devpi_devpi.html', 'devpi'),
  page('pep503-html/pypi-simple/qypi-708.html', 'qypi'),
  page('pep503-html/pypi-simple/qypi.html', 'qypi'),
  page('pep503-html/pypi-simple/qypi_repo_version.html', 'qypi'),
  page('pep691-json/poetry/absolute.json', 'poetry'),
  page('pep691-json/poetry/demo.json', 'demo'),
  page('pep691-json/poetry/invalid-version.json', 'poetry'),
  page('pep691-json/poetry/isort-metadata.json', 'isort-metadata'),
  page('pep691-json/poetry/jupyter.json', 'jupyter'),
  page('pep691-json/poetry/poetry-test-py2-py3-metadata-merge.json', 'poetry-test-py2-py3-metadata-merge'),
  page('pep691-json/poetry/relative.json', 'poetry'),
  page('pep691-json/poetry/sqlalchemy-legacy.json', 'sqlalchemy-legacy'),
  page('pep691-json/pypi-simple/argset-700.json', 'argset'),
  page('pep691-json/pypi-simple/argset-708.json', 'argset'),
  page('pep691-json/pypi-simple/argset-relative.json', 'argset'),
  page('pep691-json/pypi-simple/argset.json', 'argset'),
  page('pep691-json/pypi-simple/yanked.json', 'yanked'),
]

export function fixtureBytes(path: string): Uint8Array {
  return readFileSync(join(FIXTURE_ROOT, path))
}
