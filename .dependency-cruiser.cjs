// The layering of src/, checked by `npm run lint:deps` (part of `npm test`).
//
//   domain    pure rules and values: imports only domain (and pure npm libraries)
//   util, net, store, jobs, chain, custody, metadata, webhooks (util/infra-context.ts is the context they take)
//             infrastructure: never imports services (a use case calls down, never the reverse)
//   services  the use cases
//   http (with http/console), cli
//             the edges: routes call services, they do not build database queries themselves
//   boot/ and the entry points main*.ts
//             the composition root: wires the rest, imported by nothing below it
//
// Type-only imports count too (tsPreCompilationDeps): a type that a lower layer needs from a higher one
// belongs in the lower one.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: move what both modules need into a lower module that neither imports.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'src/domain holds pure rules: it imports only src/domain and npm libraries (no node: modules, no other layer).',
      from: { path: '^src/domain/' },
      to: {
        pathNot: ['^src/domain/'],
        dependencyTypesNot: ['npm', 'npm-dev', 'npm-optional', 'npm-peer'],
      },
    },
    {
      name: 'domain-no-io-libraries',
      severity: 'error',
      comment: 'src/domain holds pure rules: no database, HTTP, logging or process libraries.',
      from: { path: '^src/domain/' },
      to: { path: '(^|/)node_modules/(kysely|pg|better-sqlite3|fastify|@fastify/[^/]+|pino|prom-client)/' },
    },
    {
      name: 'infrastructure-not-to-services',
      severity: 'error',
      comment: 'Lower layers never import the use cases (src/services): what they share belongs in the lower layer.',
      from: { path: '^src/(metadata|webhooks|chain|custody|store|jobs|domain|util|net)/' },
      to: { path: '^src/services/' },
    },
    {
      name: 'infrastructure-not-to-edges',
      severity: 'error',
      comment: 'Lower layers and the use cases never import the edges (http, console, cli) or the composition root (boot).',
      from: { path: '^src/(metadata|webhooks|chain|custody|store|jobs|domain|util|net|services)/' },
      to: { path: '^src/(http|console|cli|boot)/' },
    },
    {
      name: 'edges-not-to-root',
      severity: 'error',
      comment: 'The HTTP and console edges are wired by the composition root (src/boot), never the reverse.',
      from: { path: '^src/(http|console)/' },
      to: { path: ['^src/(boot|cli)/', '^src/main[^/]*\\.ts$'] },
    },
    {
      name: 'http-no-queries',
      severity: 'error',
      comment: 'Routes call services; they do not build database queries (kysely, src/store/db) themselves.',
      from: { path: '^src/http/' },
      to: { path: ['(^|/)node_modules/kysely/', '^src/store/db\\.ts$'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve: the checks above would not see where it leads.',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
