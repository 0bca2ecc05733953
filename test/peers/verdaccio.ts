// Moved to bench/peers/verdaccio.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/verdaccio.js'
