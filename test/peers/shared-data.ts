// Moved to bench/peers/shared-data.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/shared-data.js'
