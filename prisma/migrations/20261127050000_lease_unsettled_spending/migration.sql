-- Credit leases record what they spent on their own row every second (src/accounts/credit-leases.ts) and settle it
-- into account.credits_used and the ledger less often (every CREDIT_LEASE_SETTLE_SECONDS, on GET /me, when the
-- lease is given back or swept). `spent`: credits spent from the lease and recorded, not yet settled (still counted
-- in account.credits_reserved); `unsettled`: the ledger rows they will become, a JSON array of one object per
-- operation and key ({op, key, cost, n, req, at}), kept as text: it is written every second and read only when
-- settled (as jsonb then), and the bind of 3,000 jsonb values took as long as the flush's update itself. The index on account_id serves GET /me, which adds its account's unsettled spending.

ALTER TABLE "credit_lease" ADD COLUMN "spent" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "credit_lease" ADD COLUMN "unsettled" TEXT NOT NULL DEFAULT '[]';
ALTER TABLE "credit_lease" ADD CONSTRAINT "credit_lease_spent_check" CHECK ("spent" >= 0);

-- CreateIndex
CREATE INDEX "credit_lease_account_id_idx" ON "credit_lease"("account_id");
