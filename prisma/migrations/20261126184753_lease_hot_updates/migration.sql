-- Each flush of spent credits (src/accounts/credit-leases.ts, every second) updates the row of every billed account
-- and of its lease. With no index on a column those updates change (the lease's expires_at was indexed) and with
-- room left on each page, PostgreSQL makes them heap-only (HOT): no new index entries, less to vacuum. The sweep of
-- expired leases reads the whole table instead, which holds one row per billed account and replica.

-- DropIndex
DROP INDEX "credit_lease_expires_at_idx";

ALTER TABLE "credit_lease" SET (fillfactor = 50);
ALTER TABLE "account" SET (fillfactor = 80);
