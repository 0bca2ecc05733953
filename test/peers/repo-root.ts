// Moved to bench/peers/repo-root.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/repo-root.js'
