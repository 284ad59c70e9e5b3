import { defineConfig } from 'prisma/config';

// The Prisma CLI is used only for `prisma generate` here: it cannot download its schema engine
// on this machine, so migrations are applied by src/db/migrate.ts.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
