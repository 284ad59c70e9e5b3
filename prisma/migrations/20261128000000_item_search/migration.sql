-- Item search (issue 44, point 1; docs/search.md; src/search/query.ts). Each item keeps its search key: ASCII letters
-- lower-cased, the star spelled `star`, every other ASCII character and a few typographic marks removed, every other
-- character kept. New items get it from the ingestion service (ensureItems computes it in TypeScript: in SQL the rule
-- costs about 70 us a name on PGlite, on every ingested row, conflicts included); the items stored before this
-- migration are keyed here by `qg_search_key`, the same rule (test/integration/item-search.test.ts compares both on
-- every name of data/items). A query matches the items whose key contains each of its words: the trigram index
-- (pg_trgm, shipped with PostgreSQL and PGlite) finds them, and serves the similarity of the suggestions a 404 of
-- GET /prices gives; the ordered index walks the keys shortest first, the order of the hits, for queries that match
-- many items.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE FUNCTION qg_search_key(name text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN replace(regexp_replace(translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), '[\x01-\x2f\x3a-\x60\x7b-\x7f\u00a0\u00a9\u00ab\u00ae\u00b7\u00bb\u2013\u2014\u2018\u2019\u201c\u201d\u201e\u2026\u2122]', '', 'g'), '★', 'star');

-- AlterTable
ALTER TABLE "item" ADD COLUMN "search_key" TEXT;

UPDATE "item" SET "search_key" = qg_search_key("market_hash_name");

-- CreateIndex
-- A small pending list (256 kB, default 4 MB): PGlite runs no autovacuum to merge it, and a search reads it whole.
CREATE INDEX "item_search_key_trgm_idx" ON "item" USING GIN ("search_key" gin_trgm_ops) WITH (gin_pending_list_limit = 256);

CREATE INDEX "item_search_order_idx" ON "item" ("app_id", length("search_key"), "market_hash_name" COLLATE "C");
