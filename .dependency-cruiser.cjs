// The layering of src/, checked by `npm run lint:deps` (part of `npm test`).
//
//   domain    pure rules and values: imports only domain (and pure npm libraries)
//   infrastructure, in floors, each importing only the floors below it (never services):
//     util, domain, net    leaf helpers
//     store                the database
//     jobs                 the job queue
//     chain                the chain wing (chains, senders, the embedded node)
//     config               the settings, the CHAINS parsing, the context the floors above take (infra-context.ts)
//     custody, metadata, webhooks
//   services  the use cases, in floors too:
//     shared     context.ts, views.ts, events.ts, uids.ts, operator-views.ts, requests/
//     audit      audit.ts (the audit log: it pages with requests/)
//     aggregates users/, apps/, collections/, assets/, rewards/ and the other use cases
//     wiring     chain/ (a chain's work: every aggregate's job handlers), verify/, console/ (reads across aggregates)
//   http (with http/console), cli
//             the edges: routes call services, they do not build database queries themselves
//   boot/ and the entry points main*.ts
//             the composition root: wires the rest, imported by nothing below it
//
// Type-only imports count too (tsPreCompilationDeps): a type that a lower layer needs from a higher one
// belongs in the lower one.
/**
 * One rule per floor: a module of a floor imports nothing of the floors above it (an arrow back up). The
 * floors are given bottom first, each as [name, path pattern].
 */
function floors(layer, list) {
  return list.slice(0, -1).map(([name, path], i) => ({
    name: `${layer}-${name.replace(/\W+/g, '-')}-not-up`,
    severity: 'error',
    comment: `${layer}: ${name} imports nothing of the floors above it (${list
      .slice(i + 1)
      .map(([n]) => n)
      .join('; ')}): what both need belongs in the lower floor.`,
    from: { path },
    to: { path: list.slice(i + 1).map(([, p]) => p) },
  }));
}

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
    ...floors('infrastructure', [
      ['util', '^src/(util|domain|net)/'],
      ['store', '^src/store/'],
      ['jobs', '^src/jobs/'],
      ['chain', '^src/chain/'],
      ['config', '^src/config/'],
      ['custody, metadata, webhooks', '^src/(custody|metadata|webhooks)/'],
    ]),
    ...floors('services', [
      ['shared', '^src/services/((context|views|events|uids|operator-views)\\.ts$|requests/)'],
      ['audit', '^src/services/audit\\.ts$'],
      ['aggregates', '^src/services/(?!(context|views|events|uids|audit|operator-views)\\.ts$|requests/|chain/|verify/|console/)'],
      ['wiring', '^src/services/(chain|verify|console)/'],
    ]),
    {
      name: 'infrastructure-not-to-services',
      severity: 'error',
      comment: 'Lower layers never import the use cases (src/services): what they share belongs in the lower layer.',
      from: { path: '^src/(metadata|webhooks|chain|custody|store|jobs|domain|util|net|config)/' },
      to: { path: '^src/services/' },
    },
    {
      name: 'infrastructure-not-to-edges',
      severity: 'error',
      comment: 'Lower layers and the use cases never import the edges (http, console, cli) or the composition root (boot).',
      from: { path: '^src/(metadata|webhooks|chain|custody|store|jobs|domain|util|net|config|services)/' },
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
