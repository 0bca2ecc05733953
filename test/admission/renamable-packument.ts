// Moved to bench/fixtures/renamable-packument.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/fixtures/renamable-packument.js'
