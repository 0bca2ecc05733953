// Moved to bench/peers/sqs.ts (bench/ never imports from test/); this re-export goes once every importer is rewritten.
export * from '../../bench/peers/sqs.js'
