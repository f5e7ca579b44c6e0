import { defineConfig } from 'drizzle-kit'

// `bun run db:generate` writes a migration for every schema change; the gateway applies them at start.
export default defineConfig({
  dialect: 'postgresql',
  schema: './server/adapters/postgres/schema.ts',
  out: './server/adapters/postgres/migrations',
  strict: true,
})
