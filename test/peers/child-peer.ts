// Moved to bench/peers/child-peer.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/child-peer.js'
