-- AlterTable
ALTER TABLE "account" ADD COLUMN     "credits_reserved" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "credit_lease" (
    "id" UUID NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "replica_id" VARCHAR(64) NOT NULL,
    "amount" BIGINT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credit_lease_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "credit_lease_expires_at_idx" ON "credit_lease"("expires_at");

-- AddForeignKey
ALTER TABLE "credit_lease" ADD CONSTRAINT "credit_lease_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A lease never holds a negative amount and reserved credits never go below 0 (src/accounts/credit-leases.ts).
ALTER TABLE "account" ADD CONSTRAINT "account_credits_reserved_check" CHECK ("credits_reserved" >= 0);
ALTER TABLE "credit_lease" ADD CONSTRAINT "credit_lease_amount_check" CHECK ("amount" >= 0);
