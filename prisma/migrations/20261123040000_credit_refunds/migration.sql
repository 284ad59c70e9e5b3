-- Refunds of charges whose answer was not delivered (an export download that failed or was cut off).
-- Ledger rule from here on: credits_used = sum(charge) - sum(refund); credits_total = sum(grant, sync).
ALTER TABLE "credit_ledger" DROP CONSTRAINT IF EXISTS "credit_ledger_kind_check";
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_kind_check"
    CHECK ("kind" IN ('charge', 'grant', 'sync', 'refund') AND ("kind" NOT IN ('charge', 'refund') OR "amount" > 0));

