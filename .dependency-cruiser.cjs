// dependency-cruiser (`npm run check:cycles`, part of `npm run lint`): no import cycle in src/, between files nor
// between folders (a folder's files may import a lower folder's, never the other way round as well). Type-only
// imports count: a cycle of types is still a cycle of design. The generated Prisma client is left out (its cycles
// are Prisma's).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle between files: move what both sides need into a lower module.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      severity: 'error',
      scope: 'folder',
      comment: 'An import cycle between folders: move what both sides need into the lower folder.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
