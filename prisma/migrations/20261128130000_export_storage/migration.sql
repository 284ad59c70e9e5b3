-- Issue 41, point 6 (requests while the export builds, embedded PGlite): compressed bytes are stored as they are
-- (STORAGE EXTERNAL: no pglz attempt on gzip and deflate data, which does not shrink), and ANALYZE skips the two
-- columns no query filters on (their sampling was most of ANALYZE's time on export_fragment: 192-467 ms against
-- about 100 ms without them, bundled data on PGlite).
ALTER TABLE "export_chunk" ALTER COLUMN "bytes" SET STORAGE EXTERNAL;
ALTER TABLE "export_fragment" ALTER COLUMN "deflated" SET STORAGE EXTERNAL;
ALTER TABLE "export_fragment" ALTER COLUMN "deflated" SET STATISTICS 0;
ALTER TABLE "export_fragment" ALTER COLUMN "digest" SET STATISTICS 0;
