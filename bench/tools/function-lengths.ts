/**
 * The longest functions of the service's own code (engine/, server/,
 * workers/), for issue 28's "no function on a request path over about 130
 * lines": every function, method, accessor, constructor and function-valued
 * arrow or expression, measured from the line its declaration starts on (its
 * doc comment not counted) to the line of its closing brace, inclusive; a
 * function's count includes the closures inside it.
 *
 * `npm run build && node dist/bench/tools/function-lengths.js [count] [folder]`
 * (default 15 rows, of this checkout; another folder holding engine/,
 * server/ and workers/, such as a `git archive` of an older commit, is
 * measured alike; not part of `npm run bench`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { repoRoot } from '../peers/repo-root.js'

const ROOTS = ['engine', 'server', 'workers']

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : []
  })
}

function nameOf(node: ts.Node, file: ts.SourceFile): string {
  const named = (node as { name?: ts.Node }).name
  if (named !== undefined) {
    const own = named.getText(file)
    const holder = ts.isClassLike(node.parent) && node.parent.name !== undefined ? `${node.parent.name.getText(file)}.` : ''
    return `${holder}${own}`
  }
  if (ts.isConstructorDeclaration(node) && ts.isClassLike(node.parent)) return `${node.parent.name?.getText(file) ?? '(class)'}.constructor`
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(file)
  return '(anonymous)'
}

interface Row { readonly lines: number, readonly where: string, readonly name: string }

const root = process.argv[3] ?? repoRoot()
const rows: Row[] = []
for (const path of ROOTS.flatMap((r) => sourceFiles(join(root, r)))) {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true)
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body !== undefined) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line
      rows.push({ lines: end - start + 1, where: `${relative(root, path)}:${start + 1}-${end + 1}`, name: nameOf(node, file) })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
}
rows.sort((a, b) => b.lines - a.lines)
const count = Number(process.argv[2] ?? 15)
for (const row of rows.slice(0, count)) console.log(`${String(row.lines).padStart(4)}  ${row.name}  ${row.where}`)
