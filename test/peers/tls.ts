// Moved to bench/peers/tls.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/tls.js'
